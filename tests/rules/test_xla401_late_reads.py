"""XLA401's step closure runs the report later, at the step's sync: it is safe only when
nothing the deferred call reads (its arguments, attributes of objects handed to it, state its
body reads, module globals) changes between the report and that sync."""

from tests.helpers import findings, fixed, src

TRAINER = """
import torch
import torch_xla


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.step = torch.tensor(0)
        self.history = []

    def log(self, **values):
        self.history.append((self.step.item(), values))

    def fit(self, loader):
        for x in loader:
            loss = self.model(x).pow(2).mean()
            loss.backward()
            self.log(loss=loss.item())
            self.optimizer.step()
            self.optimizer.zero_grad()
            {change}
            torch_xla.sync()
"""


def _closure(code: str):
    (f,) = findings(code, "XLA401")
    assert f.fix is not None
    return f


def test_a_method_that_reads_an_attribute_the_step_changes_later_is_for_review():
    f = _closure(TRAINER.format(change="self.step.add_(1)"))
    assert not f.fix.safe
    reason = f.fix.review_reason
    assert "`self.step`" in reason and "line 22" in reason and "self.step.add_(1)" in reason
    assert "needs review" in f.message
    assert "add_step_closure" not in fixed(TRAINER.format(change="self.step.add_(1)"))


def test_assignment_and_augmented_assignment_of_the_read_attribute_are_changes():
    for change in ("self.step = self.step + 1", "self.step += 1", "self.step.zero_()"):
        assert not _closure(TRAINER.format(change=change)).fix.safe, change


def test_a_method_of_the_class_that_changes_it_is_followed():
    code = TRAINER.format(change="self.advance()").replace(
        "    def fit(self, loader):",
        "    def advance(self):\n        self.step.copy_(self.step + 1)\n\n"
        "    def fit(self, loader):",
    )
    f = _closure(code)
    assert not f.fix.safe and "self.step" in f.fix.review_reason


def test_changes_to_state_the_callee_does_not_read_keep_the_fix_safe():
    for change in ("self.seen = 1", "self.optimizer.zero_grad()", "pass"):
        f = _closure(TRAINER.format(change=change))
        assert f.fix.safe, (change, f.fix.review_reason)
    out = fixed(TRAINER.format(change="pass"))
    assert (
        "xm.add_step_closure(lambda self, loss: self.log(loss=loss.item()), args=(self, loss))"
        in out
    )


def test_an_unseen_callee_handed_an_object_the_iteration_changes_is_for_review():
    code = """
    import torch
    import torch_xla
    from lightning import LightningModule


    class Module(LightningModule):
        def fit(self, loader):
            for x in loader:
                loss = self.model(x).mean()
                loss.backward()
                self.log("loss", loss.item())
                self.counter.add_(1)
                torch_xla.sync()
    """
    f = _closure(code)
    assert not f.fix.safe
    assert "cannot see" in f.fix.review_reason and "self.counter.add_(1)" in f.fix.review_reason


def test_an_argument_changed_in_place_later_is_for_review():
    code = """
    import torch
    import torch_xla
    import logging

    log = logging.getLogger(__name__)


    def train(model, loader, meter):
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            log.info("avg %s", meter.avg.item())
            meter.update(loss.detach())
            torch_xla.sync()
    """
    f = _closure(code)
    assert not f.fix.safe and "meter.update(" in f.fix.review_reason


def test_a_module_global_rebound_later_in_the_iteration_is_for_review():
    code = """
    import torch
    import torch_xla

    seen = 0


    def report(value):
        print(value, seen)


    def train(model, loader):
        global seen
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            report(loss.item())
            seen += 1
            torch_xla.sync()
    """
    (f,) = findings(code, "XLA401")
    assert f.fix is not None and not f.fix.safe and "`seen`" in f.fix.review_reason


def test_reporting_sinks_and_progress_bars_keep_the_fix_safe():
    code = """
    import torch
    import torch_xla
    from tqdm import tqdm


    def train(model, loader, writer):
        pbar = tqdm(loader)
        for step, x in enumerate(pbar):
            loss = model(x).mean()
            loss.backward()
            pbar.set_postfix(loss=loss.item())
            writer.add_scalar("loss", loss.item(), step)
            pbar.update(1)
            writer.flush()
            step += 1
            torch_xla.sync()
    """
    found = findings(code, "XLA401")
    assert len(found) == 2
    assert all(f.fix is not None and f.fix.safe for f in found), [
        f.fix.review_reason for f in found
    ]


def test_a_non_reporting_call_before_a_break_says_the_last_report_is_lost():
    code = """
    import torch


    def print0(*args):
        print(*args)


    def run(model, device, n):
        for step in range(n + 1):
            last = step == n
            x = torch.ones(8, 4, device=device)
            val = model(x).mean()
            print0(f"val {val}")
            if last:
                break
            loss = model(x).pow(2).mean()
            loss.backward()
    """
    (f,) = findings(code, "XLA401")
    assert f.fix is not None and not f.fix.safe
    assert "`break` follows on line 15" in f.fix.review_reason
    assert src(code)  # the fixture parses


def test_what_a_method_reads_through_another_method_of_the_class_counts():
    code = TRAINER.format(change="self.step.add_(1)").replace(
        "        self.history.append((self.step.item(), values))",
        "        self._record(values)\n\n"
        "    def _record(self, values):\n"
        "        self.history.append((self.step.item(), values))",
    )
    f = _closure(code)
    assert not f.fix.safe and "`self.step`" in f.fix.review_reason


def test_a_report_after_the_change_is_safe():
    code = TRAINER.format(change="pass").replace(
        "            loss.backward()\n",
        "            loss.backward()\n            self.step.add_(1)\n",
    )
    f = _closure(code)
    assert f.fix.safe, f.fix.review_reason
