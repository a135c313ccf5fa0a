"""A plain ``opt.step()`` next to ``xm.optimizer_step(opt)`` in the same loop block (held-out
66's timm-face TPU script): the script steps the optimizer twice per iteration. Rewriting the
plain one would make both all-reduce and step; the finding says so and fixes nothing."""

from tests.helpers import findings

DOUBLE = """
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def main(index):
    device = xm.xla_device()
    model = torch.nn.Linear(4, 1).to(device)
    optim = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    while step < 10:
        x = torch.randn(8, 4, device=device)
        model(x).sum().backward()
        optim.step()
        xm.optimizer_step(optim)
        optim.zero_grad()
        torch_xla.sync()
        step += 1


if __name__ == "__main__":
    xmp.spawn(main)
"""


def test_plain_step_beside_the_xla_step_of_the_same_optimizer_is_a_double_step_without_fix():
    (f,) = findings(DOUBLE, "XLA105")
    assert f.span.start.line == 14  # 0-based: `optim.step()`
    assert "stepped twice" in f.message and "line 16" in f.message
    assert f.fix is None
    assert "remove this call" in (f.manual or "")


def test_a_step_in_the_other_branch_is_not_a_second_step():
    branches = DOUBLE.replace(
        "        optim.step()\n        xm.optimizer_step(optim)\n",
        "        if step % 2:\n            optim.step()\n        else:\n"
        "            xm.optimizer_step(optim)\n",
    )
    (f,) = findings(branches, "XLA105")
    assert "stepped twice" not in f.message
    assert f.fix is not None and "xm.optimizer_step(optim)" in f.fix.title


def test_the_xla_step_of_another_optimizer_does_not_count():
    other = DOUBLE.replace("xm.optimizer_step(optim)", "xm.optimizer_step(other_optim)")
    (f,) = findings(other, "XLA105")
    assert "stepped twice" not in f.message
