"""XLA401/XLA404: a method of the training class that returns a Python number
(``return loss.item()``) gives a host value, the same as a plain function does."""

from tests.helpers import findings, fixed

TRAINER = """
import torch


class Trainer:
    def _run_batch(self, x) -> float:
        loss = self.model(x).sum()
        loss.backward()
        self.opt.step()
        return {returned}

    def run_epoch(self, loader):
        for i, x in enumerate(loader):
            batch_loss = self._run_batch(x)
            if batch_loss > 3.0:
                print("high")
            print(f"iter {{i}} loss {{batch_loss:.4f}}")
"""


def test_formatting_the_float_a_method_returns_is_not_a_device_read():
    code = TRAINER.format(returned="loss.item()")
    found = findings(code, "XLA401")
    # Only the .item() inside the method reads the device; the f-string formats a float.
    assert [(f.span.start.line, f.message.split(" reads")[0]) for f in found] == [(8, ".item()")]
    assert findings(code, "XLA404") == []


def test_a_method_that_returns_the_tensor_still_makes_formatting_a_read():
    code = TRAINER.format(returned="loss")
    found = findings(code, "XLA401")
    assert [f.span.start.line for f in found] == [15]
    assert found[0].message.startswith("formatting a tensor")
    assert [f.span.start.line for f in findings(code, "XLA404")] == [13]


def test_a_same_named_method_of_another_class_is_not_trusted():
    code = """
    import torch


    class Metrics:
        def _run_batch(self, x):
            return x.item()


    class Trainer(Base):
        def run_epoch(self, loader):
            for x in loader:
                loss = self.model(x).sum()
                loss.backward()
                self.opt.step()
                batch_loss = self._run_batch(x)
                print(f"{batch_loss:.4f}")
    """
    # ``self._run_batch`` here is Base's (not in this file), not Metrics': keep reporting.
    found = findings(code, "XLA401")
    assert [f.span.start.line for f in found] == [15]


def test_a_plain_function_returning_a_float_is_still_a_host_value():
    code = """
    import torch


    def step(model, opt, x):
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss.item()


    def train(model, opt, loader):
        for i, x in enumerate(loader):
            batch_loss = step(model, opt, x)
            print(f"iter {i} loss {batch_loss:.4f}")
    """
    assert [f.span.start.line for f in findings(code, "XLA401")] == [7]


def test_a_tensor_formatted_into_a_printed_string_is_a_read():
    # held-out 20 (tacotron2): print("... {:.6f}".format(iteration, loss, grad_norm)) with
    # grad_norm = clip_grad_norm_(...), a device tensor; the safe fix defers the print.
    code = """
    import torch

    def train(model, loader, opt):
        for i, batch in enumerate(loader):
            loss = model(batch.cuda()).sum()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            print("step {} norm {:.3f}".format(i, grad_norm))
            print("norm %.3f" % grad_norm)
    """
    found = [f for f in findings(code, "XLA401") if "logging call" in f.message]
    assert [f.span.start.line for f in found] == [8, 9]
    out = fixed(code, "XLA401")
    assert "xm.add_step_closure(lambda grad_norm: print(" in out
