"""XLA105 when a helper of the project builds the process group: VIRT's ``launch(main,
args)`` (held-out 160) starts torchrun replicas that never reduce their gradients, so
``xm.optimizer_step`` would make them train one model (review); UniPhy's ``init_distributed``
and ``wrap_ddp`` (held-out 161) own the all-reduce, so the plain step stays."""

from __future__ import annotations

from pathlib import Path

from xla_lens.engine import analyze
from xla_lens.semantic.workspace import clear_cache

from tests.helpers import src

ENGINE = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def launch(main_func, args):
    if int(os.environ["WORLD_SIZE"]) > 1:
        dist.init_process_group(backend="nccl", init_method="env://")
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    main_func(args)


def wrap_ddp(model, local_rank):
    return DDP(model, device_ids=[local_rank])
"""

SCRIPT = """
import torch
from engine import launch{extra_import}


def main(args):
    model = torch.nn.Linear(4, 2).cuda(){wrap}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x.cuda()).sum().backward()
        optimizer.step()


if __name__ == "__main__":
    launch(main, None)
"""


def _xla105(tmp_path: Path, extra_import: str = "", wrap: str = "") -> list:
    (tmp_path / "engine.py").write_text(src(ENGINE))
    script = tmp_path / "main.py"
    script.write_text(SCRIPT.format(extra_import=extra_import, wrap=wrap).lstrip())
    clear_cache()
    result = analyze(script.read_text(), str(script))
    return [f for f in result.findings if f.code == "XLA105"]


def test_replicas_a_helper_starts_without_a_reduction_keep_their_own_steps(tmp_path: Path):
    (f,) = _xla105(tmp_path)
    assert f.fix is not None and not f.fix.safe
    assert "the replicas train independently" in f.fix.review_reason


def test_a_helper_ddp_wrapper_owns_the_reduction(tmp_path: Path):
    wrapped = _xla105(
        tmp_path,
        extra_import=", wrap_ddp",
        wrap="\n    model = wrap_ddp(model, 0)",
    )
    assert wrapped == []
