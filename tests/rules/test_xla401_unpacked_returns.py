"""XLA401: a value unpacked from what a script function returns, read in a nested function
(I-JEPA, held-out 30: ``(loss, lr), etime = gpu_timer(train_step)`` where ``train_step``
returns ``float(loss)``, then logged by a ``log_stats()`` defined in the loop). The float is
a host number; the read that syncs is ``float(loss)`` in ``train_step``, reported there."""

import pytest
from xla_lens.engine import analyze

from tests.helpers import src

SCRIPT = """
import torch
import torch.nn as nn


def timed(closure):
    start = 0.0
    result = closure()
    return result, 1.0 - start


def main(loader):
    model = nn.Linear(4, 1).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        x, y = x.to("cuda"), y.to("cuda")

        def train_step():
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return RETURNED, 0.1

        (loss, lr), elapsed = timed(train_step)

        def log_stats():
            print(step, loss, lr, elapsed)

        log_stats()
"""


def _log_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if "print(step" in line)


def _read_lines(text: str) -> list[int]:
    return [f.span.start.line for f in analyze(text, "train.py").findings if f.code == "XLA401"]


def _reads(returned: str) -> list[tuple[int, str]]:
    found = analyze(src(SCRIPT.replace("RETURNED", returned)), "train.py").findings
    return [(f.span.start.line, f.message) for f in found if f.code == "XLA401"]


def test_a_float_returned_through_a_wrapper_is_a_host_value_in_a_closure() -> None:
    reads = _reads("float(loss)")
    assert [line for line, _ in reads] == [21]  # float(loss) itself, in train_step
    assert "float(tensor)" in reads[0][1]


@pytest.mark.parametrize("returned", ["loss", "loss.detach()"])
def test_a_tensor_returned_through_the_wrapper_is_still_read_where_it_is_logged(
    returned: str,
) -> None:
    assert _log_line(src(SCRIPT)) in [line for line, _ in _reads(returned)]


def test_a_wrapper_that_can_return_something_else_proves_nothing() -> None:
    text = src(SCRIPT.replace("RETURNED", "float(loss)")).replace(
        "    return result, 1.0 - start\n",
        "    if start:\n        return torch.zeros(1, device='cuda'), 0.0\n"
        "    return result, 1.0 - start\n",
    )
    assert _log_line(text) in _read_lines(text)


def test_a_closure_name_rebound_in_the_enclosing_function_counts_every_binding() -> None:
    text = src(SCRIPT.replace("RETURNED", "float(loss)")).replace(
        "        log_stats()\n", "        log_stats()\n        loss = x.sum()\n"
    )
    assert _log_line(text) in _read_lines(text)


TIMER = """
import torch


def timed(closure, enabled=True):
    elapsed = -1.0
    if enabled and torch.cuda.is_available():
        start = torch.cuda.Event(enable_timing=True)
        start.record()
    result = closure()
    return result, elapsed
"""


@pytest.mark.parametrize(("returned", "logged_read"), [("float(loss)", False), ("loss", True)])
def test_the_wrapper_may_live_in_a_workspace_module(
    tmp_path, returned: str, logged_read: bool
) -> None:
    (tmp_path / "timing.py").write_text(src(TIMER))
    text = src(SCRIPT.replace("RETURNED", returned))
    text = text.replace("def timed(closure):", "def unused(closure):").replace(
        "import torch.nn as nn\n", "import torch.nn as nn\nfrom timing import timed\n"
    )
    script = tmp_path / "train.py"
    script.write_text(text)
    found = analyze(text, str(script)).findings
    reads = [f.span.start.line for f in found if f.code == "XLA401"]
    assert (_log_line(text) in reads) is logged_read
