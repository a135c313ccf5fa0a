"""XLA206: ReduceOp.AVG raises on the "xla" process group (held-out 11, llm.c's logged loss)."""

from __future__ import annotations

import ast

from tests.helpers import findings, fixed, src

CUDA_DDP = """
import torch
import torch.distributed as dist

dist.init_process_group(backend="nccl")
model = torch.nn.Linear(4, 1).cuda()
loss_avg = torch.zeros(1, device="cuda")
dist.all_reduce(loss_avg, op=dist.ReduceOp.AVG)
dist.all_reduce(loss_avg, dist.ReduceOp.AVG, group=None)
dist.all_reduce(loss_avg, op=dist.ReduceOp.SUM)
work = dist.all_reduce(loss_avg, op=dist.ReduceOp.AVG, async_op=True)
"""


def test_avg_is_reported_and_the_statement_form_is_rewritten_for_review():
    found = findings(CUDA_DDP, "XLA206")
    assert [f.span.start.line for f in found] == [6, 7, 9]
    first, second, handle = found
    assert first.fix is not None and not first.fix.safe and "dtype" in first.fix.review_reason
    assert second.fix is not None
    assert handle.fix is None and "SUM" in handle.manual
    assert fixed(CUDA_DDP, "XLA206") == src(CUDA_DDP)  # never applied by Convert
    out = fixed(CUDA_DDP, "XLA206", unsafe=True)
    ast.parse(out)
    assert (
        "dist.all_reduce(loss_avg, op=dist.ReduceOp.SUM)\nloss_avg /= dist.get_world_size()\n"
        in out
    )
    assert (
        "dist.all_reduce(loss_avg, dist.ReduceOp.SUM, group=None)\n"
        "loss_avg /= dist.get_world_size(None)\n" in out
    )
    assert fixed(out, "XLA206", unsafe=True) == out


def test_aliases_of_reduce_op_are_followed():
    code = """
    import torch
    from torch.distributed import ReduceOp, all_reduce
    t = torch.ones(1).cuda()
    all_reduce(t, op=ReduceOp.AVG)
    """
    (f,) = findings(code, "XLA206")
    assert f.fix is None  # no module prefix to size the group with: advice only


def test_quiet_without_avg_or_on_a_script_that_stays_on_the_cpu():
    cpu_only = """
    import torch
    import torch.distributed as dist
    dist.init_process_group(backend="gloo")
    t = torch.ones(1)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    """
    assert findings(cpu_only, "XLA206") == []
    summed = CUDA_DDP.replace("AVG", "SUM")
    assert findings(summed, "XLA206") == []


def test_already_xla_script_with_avg_is_reported_it_would_crash():
    code = """
    import torch
    import torch.distributed as dist
    import torch_xla
    import torch_xla.distributed.xla_backend
    import torch_xla.core.xla_model as xm

    def _mp_fn(index):
        dist.init_process_group("xla", init_method="xla://")
        t = torch.ones(1, device=torch_xla.device())
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        xm.mark_step()
    """
    (f,) = findings(code, "XLA206")
    assert "Invalid reduce op" in f.message
