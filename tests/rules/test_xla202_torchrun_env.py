"""XLA202 on torchrun's environment: reads by a loop key, truth tests of an env read, number
defaults, and the scripts that torchrun itself starts on XLA (where the reads are right)."""

from __future__ import annotations

from xla_lens.rules.base import Category
from xla_lens.rules.registry import all_rules
from xla_lens.rules.xla202_rank_world_size import NO_LAUNCHER_REASON

from tests.helpers import findings, fixed, src

# A torchrun DDP script being converted: the launch parameters are collected by a loop key.
COLLECTED_ENV = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    launch = {name: os.environ[name] for name in ("MASTER_ADDR", "RANK", "WORLD_SIZE")}
    rank = int(launch["RANK"])
    dist.init_process_group("nccl", rank=rank, world_size=int(launch["WORLD_SIZE"]))
    return rank


def train():
    rank = setup()
    model = DDP(torch.nn.Linear(8, 2).cuda(rank), device_ids=[rank])
    print(model)


if __name__ == "__main__":
    train()
"""


def test_env_read_by_a_loop_key_is_reported_without_a_fix():
    (f,) = findings(COLLECTED_ENV, "XLA202")
    assert f.span.start.line + 1 == 8 and f.fix is None
    assert "MASTER_ADDR, RANK, WORLD_SIZE" in f.message and "KeyError" in f.message
    assert "RANK -> xr.global_ordinal()" in f.manual
    assert "WORLD_SIZE -> xr.world_size()" in f.manual
    assert "MASTER_ADDR need no replacement" in f.manual
    legacy = findings(COLLECTED_ENV, "XLA202", target="legacy")[0]
    assert "RANK -> xm.get_ordinal()" in legacy.manual and "local_process_count" not in (
        legacy.manual
    )


def test_for_loop_over_a_module_constant_with_getenv():
    code = """
    import os
    import torch

    KEYS = ["LOCAL_RANK", "LOCAL_WORLD_SIZE"]

    def placement():
        found = {}
        for key in KEYS:
            found[key] = os.getenv(key, "0")
        return torch.device("cuda", int(found["LOCAL_RANK"]))
    """
    (f,) = findings(code, "XLA202")
    assert f.span.start.line + 1 == 9 and f.fix is None
    assert "defaults on every replica" in f.message
    assert "LOCAL_WORLD_SIZE -> xr.local_process_count()" in f.manual


def test_loop_keys_that_are_not_torchrun_s_are_not_reported():
    code = """
    import os
    settings = {k: os.environ[k] for k in ("HOME", "USER")}
    paths = [os.environ.get(k) for k in some_list()]
    for k in ("RANK",):
        os.environ[k] = "0"
    """
    assert findings(code, "XLA202") == []


# Already written for XLA and started by torchrun (torchrun --nproc_per_node=N train.py):
# torchrun sets the variables, and torch_xla's xla:// rendezvous reads the same ones.
XLA_TORCHRUN = """
import os
import torch
import torch.distributed as dist
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.runtime as xr
from torch.nn.parallel import DistributedDataParallel as DDP


def train():
    dist.init_process_group("xla", init_method="xla://")
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    is_ddp = int(os.environ.get("RANK", -1)) != -1
    launch = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK")}
    if not xm.is_master_ordinal():
        xm.rendezvous("download")
    device = torch_xla.device()
    model = torch.nn.Linear(4, 2).to(device)
    if is_ddp:
        model = DDP(model, gradient_as_bucket_view=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * world_size)
    for step in range(4):
        loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
    if local_rank == 0:
        print("done", launch, xr.global_ordinal())


if __name__ == "__main__":
    train()
"""


def test_already_xla_torchrun_script_stays_silent():
    assert findings(XLA_TORCHRUN, "XLA202") == []
    conversion = {Category.CONVERSION, Category.DISTRIBUTED}
    kinds = {r.code: r.category for r in all_rules()}
    assert [f for f in findings(XLA_TORCHRUN) if kinds[f.code] in conversion] == []


def test_same_reads_under_the_xla_launcher_are_reported():
    launched = XLA_TORCHRUN.replace(
        'if __name__ == "__main__":\n    train()',
        'def _mp_fn(index):\n    train()\n\n\nif __name__ == "__main__":\n'
        "    torch_xla.launch(_mp_fn)",
    )
    lines = sorted(f.span.start.line + 1 for f in findings(launched, "XLA202"))
    assert lines == [13, 14, 15, 16]


def test_truth_test_of_an_unset_read_is_a_world_size_sentinel():
    code = """
    import os
    if os.environ.get("WORLD_SIZE"):
        pass
    ddp = bool(os.getenv("RANK"))
    single = not os.environ.get("LOCAL_RANK", "")
    """
    found = findings(code, "XLA202")
    assert len(found) == 3 and all(f.fix.review_reason == NO_LAUNCHER_REASON for f in found)
    assert fixed(code, "XLA202", unsafe=True) == src(
        """
        import os
        import torch_xla.runtime as xr
        if xr.world_size() > 1:
            pass
        ddp = bool(xr.world_size() > 1)
        single = not (xr.world_size() > 1)
        """
    )


def test_values_whose_type_or_absence_the_rewrite_changes_are_reviewed():
    code = """
    import os
    ws = os.environ.get("WORLD_SIZE")
    rank = os.getenv("RANK", 0)
    local = os.environ.get("LOCAL_RANK") or "0"
    first = int(os.getenv("RANK", 0))
    n = os.environ.get("WORLD_SIZE", "1")
    """
    by_line = {f.span.start.line + 1: f for f in findings(code, "XLA202")}
    assert "None" in by_line[2].fix.review_reason and not by_line[2].fix.safe
    assert "number" in by_line[3].fix.review_reason and not by_line[3].fix.safe
    assert not by_line[4].fix.safe  # the value is used, not only its truth: no sentinel
    assert by_line[5].fix.review_reason == by_line[6].fix.review_reason == NO_LAUNCHER_REASON
    out = fixed(code, "XLA202", unsafe=True)
    assert "first = xr.global_ordinal()\n" in out and "n = str(xr.world_size())\n" in out
    assert fixed(code, "XLA202") == src(code)


def test_a_loop_read_under_a_membership_test_is_not_said_to_raise():
    # Held-out 12 (timm utils/distributed.py): each read sits under `if v in os.environ`.
    code = """
    import os

    def local_rank_from_env():
        local = 0
        for key in ("LOCAL_RANK", "SLURM_LOCALID"):
            if key in os.environ:
                local = int(os.environ[key])
                break
        return local

    def unguarded():
        for key in ("RANK", "SLURM_PROCID"):
            return int(os.environ[key])
    """
    guarded, bare = findings(code, "XLA202")
    assert "KeyError" not in guarded.message and "defaults on every replica" in guarded.message
    assert "KeyError" in bare.message
