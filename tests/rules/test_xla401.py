from xla_lens.rules.registry import get_rule
from xla_lens.rules.xla401_host_read import free_names

from tests.helpers import findings, fix_one, fixed, src

LOOP = """
import torch
import logging

log = logging.getLogger(__name__)


def train(model, loader, optimizer, criterion, pbar):
    running = 0.0
    for step, (x, y) in enumerate(loader):
        out = model(x)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
        running += loss.item()
        print(f"step {step} loss {loss}")
        log.info("loss %.3f", loss.item())
        pbar.set_postfix(loss=loss)
        if float(loss) > 3:
            pass
        n = len(x)
        print("epoch done")
"""


def test_host_reads_in_the_loop_are_found():
    found = findings(LOOP, "XLA401")
    assert [(f.span.start.line, f.fix is not None) for f in found] == [
        (13, False),  # running += loss.item(): accumulate on the device instead
        (14, True),
        (15, True),
        (16, True),
        (17, False),  # a condition: manual
    ]
    assert "loss.detach()" in found[0].manual


def test_reporting_statements_move_into_step_closures():
    # The iteration prints nothing after them (its "epoch done" comes after the loop).
    code = LOOP.replace('        print("epoch done")', '    print("epoch done")')
    out = fixed(code, "XLA401")
    assert out.splitlines()[15:18] == [  # one line down: the added import
        '        xm.add_step_closure(lambda step, loss: print(f"step {step} loss {loss}"), args=(step, loss))',
        '        xm.add_step_closure(lambda loss: log.info("loss %.3f", loss.item()), args=(loss,))',
        "        xm.add_step_closure(lambda pbar, loss: pbar.set_postfix(loss=loss), args=(pbar, loss))",
    ]
    assert "import torch_xla.core.xla_model as xm\n" in out
    # Code outside the fixes is untouched, and the same on the legacy target.
    assert '    print("epoch done")' in out
    assert fixed(code, "XLA401", target="legacy") == out
    remaining = findings(out, "XLA401")
    assert [f.span.start.line for f in remaining] == [14, 18]


def test_a_message_printed_later_in_the_iteration_keeps_text_reports_for_review():
    # "epoch done" prints at once: deferred, the two reports before it would follow it.
    found = {f.span.start.line: f for f in findings(LOOP, "XLA401")}
    for line, first_later in ((14, "line 16"), (15, "line 21")):
        assert not found[line].fix.safe
        assert first_later in found[line].fix.review_reason
        assert "out of order" in found[line].fix.review_reason
    assert found[16].fix.safe  # a progress bar's postfix is no line of text


def test_text_reports_deferred_together_keep_their_order():
    # The print's only later message is the log line, deferred too (safely): closures run in
    # the order they were added, so the print stays safe while the log line is.
    code = LOOP.replace('        print("epoch done")', '    print("epoch done")')
    found = {f.span.start.line: f for f in findings(code, "XLA401")}
    assert found[14].fix.safe and found[15].fix.safe


def test_existing_xm_alias_and_module_level_loop_without_free_names():
    code = """
    import torch
    import torch_xla.core.xla_model as X

    for batch in loader:
        loss = model(batch).sum()
        loss.backward()
        opt.step()
        print(torch.ones(2).cuda().sum().item())
    """
    out = fixed(code, "XLA401")
    assert "    X.add_step_closure(lambda: print(torch.ones(2).cuda().sum().item()))\n" in out


def test_non_reporting_statement_gets_a_reviewed_fix_only():
    code = """
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss.detach().cpu().numpy())
    """
    (f,) = findings(code, "XLA401")
    assert ".numpy()" in f.message  # one finding per chain, at the outer read
    assert not f.fix.safe
    assert fixed(code, "XLA401") == src(code)
    out = fix_one(code, f)
    assert (
        "xm.add_step_closure(lambda history, loss: history.append(loss.detach().cpu().numpy()), "
        "args=(history, loss))" in out
    )


def test_step_function_and_comprehension_names():
    code = """
    import torch

    def train_step(model, batch, optimizer):
        outputs = model(**batch)
        outputs.loss.backward()
        optimizer.step()
        print([v.item() for v in outputs.values()])

    def main():
        for batch in loader:
            train_step(model, batch, optimizer)
    """
    (f,) = findings(code, "XLA401")
    assert f.span.start.line == 6
    out = fixed(code, "XLA401")
    assert "lambda outputs: print([v.item() for v in outputs.values()]), args=(outputs,)" in out


def test_free_names_skip_builtins_imports_module_defs_and_globals():
    import ast

    from xla_lens.engine import analyze

    code = src(
        """
        import numpy as np
        CONFIG = {}

        def helper(v):
            return v

        def train(loss, step):
            print(len(CONFIG), np.mean(helper(loss)), step, loss)
        """
    )
    model = analyze(code).model
    stmt = next(n for n in ast.walk(model.tree) if isinstance(n, ast.Expr))
    assert free_names(model, stmt) == ["loss", "step"]


def test_converted_and_host_only_code_reports_nothing():
    code = """
    import torch_xla.core.xla_model as xm

    def _log(loss):
        print(loss.item())

    def train():
        total = 0.0
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            xm.optimizer_step(optimizer)
            total = total + loss.detach()
            xm.add_step_closure(lambda loss: print(loss.item()), args=(loss,))
            xm.add_step_closure(_log, args=(loss,))
            print(step, len(x), x.shape, loss.dtype)
            acc = float(step)
        print(total.item())
    """
    assert findings(code, "XLA401") == []


def test_outside_a_training_loop_nothing_is_reported():
    code = """
    loss = model(x).sum()
    print(loss.item())
    for v in values:
        print(v.item())
    """
    assert findings(code, "XLA401") == []


def test_hover_keys():
    hover = get_rule("XLA401").hover
    for key in (".item", ".tolist", ".cpu"):
        assert "add_step_closure" in hover[key]


EXIT_AFTER = """
import sys
import torch_xla
for step, (x, y) in enumerate(loader):
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    print(loss)
    if step == 3:
        sys.exit(0)
    torch_xla.sync()
"""


def test_a_report_followed_by_an_exit_is_offered_for_review_only():
    # Deferred to a step closure, the message would be lost when sys.exit() runs first.
    (f,) = findings(EXIT_AFTER, "XLA401")
    assert f.fix is not None and not f.fix.safe
    assert "sys.exit" in f.fix.review_reason and "needs review" in f.message
    assert fixed(EXIT_AFTER, "XLA401") == src(EXIT_AFTER)
    for stop in ("break", "return", "continue"):
        code = EXIT_AFTER.replace("sys.exit(0)", stop)
        if stop == "return":
            code = "def train():\n" + "".join(
                "    " + line + "\n" for line in src(code).splitlines()
            )
        (f,) = findings(code, "XLA401")
        assert not f.fix.safe, stop


def test_a_report_after_the_loops_only_sync_is_offered_for_review_only():
    code = """
    import torch_xla
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        print(loss.mean())
    """
    # ``print(loss)`` here reads the value the sync just computed (no finding); an op on it
    # makes a new graph, and the closure would run only at the next step's sync.
    (f,) = findings(code, "XLA401")
    assert not f.fix.safe and "comes before it" in f.fix.review_reason
    assert findings(code.replace("loss.mean()", "loss"), "XLA401") == []


def test_a_report_before_the_sync_or_in_an_xla_loader_loop_is_safe():
    before = """
    import torch_xla
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        print(loss)
        torch_xla.sync()
    """
    (f,) = findings(before, "XLA401")
    assert f.fix.safe
    assert "add_step_closure(lambda loss: print(loss), args=(loss,))" in fixed(before, "XLA401")
    loader_loop = """
    import torch_xla.distributed.parallel_loader as pl
    for x in pl.MpDeviceLoader(loader, device):
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        print(loss)
    """
    (f,) = findings(loader_loop, "XLA401")
    assert f.fix.safe


def test_a_report_through_a_with_resource_is_offered_for_review_only():
    code = """
    import torch_xla
    for step, x in enumerate(loader):
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        with open(log_file, "a") as f:
            f.write(f"{step} train {loss.item():.6f}\\n")
        with torch.no_grad():
            print(loss)
        torch_xla.sync()
    """
    closed, fine = findings(code, "XLA401")
    # Deferred to the step's end, f.write would run on a closed file.
    assert not closed.fix.safe and "`f`" in closed.fix.review_reason
    assert fine.fix.safe


def test_a_report_to_a_file_closed_right_after_names_the_close():
    # Held-out 89 (MCD_DA's solver): `record = open(...)`, `record.write(...)`,
    # `record.close()`: deferred, the write ran on the closed file (ValueError).
    code = """
    import torch_xla
    for step, x in enumerate(loader):
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        record = open(log_file, "a")
        record.write("%s\\n" % loss)
        record.close()
        torch_xla.sync()
    """
    (f,) = [
        f for f in findings(code, "XLA401") if "record" in (f.fix.review_reason if f.fix else "")
    ]
    assert not f.fix.safe and "line 8 closes" in f.fix.review_reason


def test_a_report_before_the_exit_checks_is_safe_when_the_sync_goes_before_them():
    code = """
    import torch
    step = 0
    while True:
        loss = model(next(it)).sum()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")
        step += 1
        if step >= max_steps:
            break
    """
    (f,) = findings(code, "XLA401")
    assert f.fix.safe
    out = fixed(code)
    closure = out.index("xm.add_step_closure")
    assert closure < out.index("torch_xla.sync()") < out.index("if step >= max_steps:")
