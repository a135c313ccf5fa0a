"""`check` predicts what `fix` does: the fixpoint re-analyses the script after each round, and
a round's own imports (``import torch_xla...``) must not change which code counts as the
launcher's parent (held-out yolov5 / llm.c: check said "no fix here" for module-level env reads,
then fix's second round rewrote them to ``xr.world_size()`` at import time)."""

from __future__ import annotations

from collections import Counter

from xla_lens.engine import Settings, analyze, fix_source
from xla_lens.engine.fix_plan import plan

from tests.helpers import findings, src

MODULE_LEVEL_READ = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = int(os.getenv("WORLD_SIZE", "1"))


def main(steps):
    ddp = WORLD_SIZE > 1
    if ddp:
        dist.init_process_group(backend="nccl")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 1).to(device)
    if ddp:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main(3)
"""

SENTINEL_IN_GUARD = """
import os
import torch
from torch.distributed import init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP


def print0(*args):
    if int(os.environ.get("RANK", 0)) == 0:
        print(*args)


if __name__ == "__main__":
    ddp = int(os.environ.get("RANK", -1)) != -1
    if ddp:
        init_process_group(backend="nccl")
        ddp_rank = int(os.environ["RANK"])
    model = torch.nn.Linear(4, 1)
    if ddp:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    print0("done")
"""


def _predicted(text: str) -> Counter[str]:
    """What `check --fix-plan` says `fix` applies in its first round: the safe fixes it does
    not hold back (engine/consistency.py)."""
    found = findings(text)
    _later, held = plan(src(text), "<script>", Settings(), "modern", found)
    return Counter(
        f.code for i, f in enumerate(found) if f.fix is not None and f.fix.safe and i not in held
    )


def _applied(text: str) -> tuple[str, Counter[str]]:
    out = fix_source(src(text), target="modern")
    assert out.error is None
    return out.source, Counter(out.applied)


def test_check_predicts_fix_for_a_module_level_world_size_read():
    converted, applied = _applied(MODULE_LEVEL_READ)
    assert applied == _predicted(MODULE_LEVEL_READ)
    assert 'WORLD_SIZE = int(os.getenv("WORLD_SIZE", "1"))' in converted
    assert "WORLD_SIZE = xr.world_size()" not in converted
    # DDP over NCCL waits for review (torchrun starts it), so the device move waits with it:
    # a model on XLA under an NCCL DDP fails when DDP is built (engine/consistency.py).
    assert 'torch.device("cuda" if torch.cuda.is_available() else "cpu")' in converted
    left = {f.code: f for f in analyze(converted, target="modern").findings}
    assert left["XLA205"].fix is not None and not left["XLA205"].fix.safe
    # Before it too: torchrun starts it (its own group from torchrun's variables, no launcher
    # a safe fix adds), and torchrun keeps starting it once converted.
    assert [f for f in findings(MODULE_LEVEL_READ) if f.code == "XLA202"] == []


def test_check_predicts_fix_for_env_reads_in_the_main_guard():
    converted, applied = _applied(SENTINEL_IN_GUARD)
    assert applied == _predicted(SENTINEL_IN_GUARD)
    assert 'ddp = int(os.environ.get("RANK", -1)) != -1' in converted
    assert 'ddp_rank = int(os.environ["RANK"])' in converted
    assert "xr.world_size() > 1" not in converted


def test_a_converted_script_without_a_launcher_keeps_its_parent_code_parent_code():
    # What the first round leaves: torch_xla imported, the xla backend, still no launcher.
    code = """
    import os
    import torch
    import torch.distributed as dist
    import torch_xla
    import torch_xla.distributed.xla_backend

    WORLD_SIZE = int(os.getenv("WORLD_SIZE", "1"))


    def main():
        dist.init_process_group(backend="xla", init_method="xla://")
        model = torch.nn.Linear(4, 1).to(torch_xla.device())
        print(WORLD_SIZE, model)


    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA202")
    assert f.fix is None and "parent process" in f.message, f.message
