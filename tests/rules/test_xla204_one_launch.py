"""XLA204 converts one launcher, never two: a script whose main() starts its workers with
mp.spawn gets that call converted; the next fixpoint round must not also wrap main() in
_mp_fn and launch it, or each replica would launch again inside a launched process
("Runtime is already initialized") — a reviewed fix must not crash by construction."""

from __future__ import annotations

import re

import pytest
from xla_lens.engine import fix_source

from tests.conversions.harness import assert_proven, prove
from tests.helpers import findings, src

# A worker spawned from main(), main() called by the guard (the vits shape).
SPAWN_IN_MAIN = """
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

STEPS = int(os.environ.get("XLA_LENS_STEPS", "3"))


def worker(index, world):
    print("xla-lens-mp-fn: started")
    dist.init_process_group("nccl")
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(16, 8, generator=gen)
    target = torch.randn(16, 1, generator=gen)
    model = torch.nn.Linear(8, 1).cuda(index)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(STEPS):
        x, y = data.cuda(index), target.cuda(index)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(f"xla-lens-loss: {loss.item()}")
    print(f"xla-lens-param-device: {next(model.parameters()).device}")


def main():
    # A CUDA trace no fix removes: the script stays "being converted" after round one.
    n = torch.cuda.device_count()
    mp.spawn(worker, nprocs=n, args=(n,))


if __name__ == "__main__":
    main()
"""

# The same shape with a worker that trains nothing visible: the second round's guard rewrite
# got a fix here (the held-out nesting).
SETUP_ONLY = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world):
    dist.init_process_group("nccl", rank=rank, world_size=world)
    print("up", rank)


def main():
    n = torch.cuda.device_count()
    mp.spawn(worker, nprocs=n, args=(n,))


if __name__ == "__main__":
    main()
"""

LAUNCH = re.compile(r"\b(torch_xla\.launch|xmp\.spawn|mp\.spawn)\(")


@pytest.mark.parametrize("script", [SPAWN_IN_MAIN, SETUP_ONLY])
def test_all_fixes_with_review_give_one_launch(script):
    out = fix_source(src(script), "t.py", unsafe=True)
    assert out.error is None
    assert len(LAUNCH.findall(out.source)) == 1, out.source
    assert "torch_xla.launch(worker, args=(n,))" in out.source
    assert "_mp_fn" not in out.source
    assert out.applied.count("XLA204") == 1
    # Nothing asks the user to add a second launcher by hand either.
    assert [f for f in out.remaining if f.code == "XLA204"] == []


def test_a_script_that_already_calls_the_xla_launcher_gets_no_guard_rewrite():
    # What the first round leaves: main() launches; the guard's main() must stay as it is.
    launched = SPAWN_IN_MAIN.replace(
        "import torch.multiprocessing as mp\n",
        "import torch.multiprocessing as mp\nimport torch_xla\n",
    ).replace("mp.spawn(worker, nprocs=n, args=(n,))", "torch_xla.launch(worker, args=(n,))")
    assert findings(launched, "XLA204") == []
    legacy = launched.replace(
        "import torch_xla\n", "import torch_xla.distributed.xla_multiprocessing as xmp\n"
    ).replace("torch_xla.launch(", "xmp.spawn(")
    assert findings(legacy, "XLA204") == []


@pytest.mark.xla
def test_the_reviewed_conversion_runs_with_one_launcher(tmp_path):
    fixture = tmp_path / "spawn_in_main.py"
    fixture.write_text(SPAWN_IN_MAIN.lstrip())
    # The original needs NCCL: only the conversion runs (under PJRT CPU).
    result = prove(fixture, steps=2, run_original=False, unsafe=True, timeout=180)
    assert len(LAUNCH.findall(result.converted_source)) == 1, result.converted_source
    assert "Runtime is already initialized" not in result.converted.stderr
    assert_proven(result, expect_mp_fn=True)
