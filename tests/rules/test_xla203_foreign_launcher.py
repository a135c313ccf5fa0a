"""XLA203 when torch.multiprocessing.spawn (or torchrun) starts the processes.

The sampler's defaults ask the script's process group, which numbers the processes as their
launcher does; ``xr.world_size()``/``xr.global_ordinal()`` number them only when torch_xla
started them. Under mp.spawn every process answers 1 and 0 (proven by running below), so
the fix would give each process all the data: review until the launcher is torch_xla's."""

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.helpers import findings, fixed, src

SPAWN = """
import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler


def worker(index, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29631", world_size=world, rank=index)
    sampler = DistributedSampler(list(range(8)))
    print(index, sorted(sampler))


if __name__ == "__main__":
    torch.multiprocessing.spawn(worker, (2,), 2)
"""


def test_sampler_under_mp_spawn_is_for_review_and_names_the_launcher():
    (f,) = findings(SPAWN, "XLA203")
    assert f.fix is not None and not f.fix.safe
    reason = f.fix.review_reason
    assert "torch.multiprocessing.spawn (line 13)" in reason
    assert "ordinal 0 and world size 1" in reason and "all the data" in reason
    assert "needs review" in f.message
    assert "DistributedSampler(list(range(8)))" in fixed(SPAWN, "XLA203")
    assert "num_replicas=xr.world_size()" in fixed(SPAWN, "XLA203", unsafe=True)


def test_runtime_values_under_mp_spawn_are_reported_with_no_fix():
    # What the old safe fix wrote: `check` on it must not go quiet while mp.spawn stays.
    code = src(SPAWN).replace(
        "DistributedSampler(list(range(8)))",
        "DistributedSampler(list(range(8)), num_replicas=xr.world_size(), "
        "rank=xr.global_ordinal(), shuffle=True)",
    )
    code = code.replace("import torch\n", "import torch\nimport torch_xla.runtime as xr\n")
    (f,) = findings(code, "XLA203")
    assert f.fix is None and f.manual
    assert "torch.multiprocessing.spawn (line 14)" in f.message
    assert "all the data" in f.message


def test_explicit_ranks_from_the_spawn_index_report_nothing():
    code = src(SPAWN).replace(
        "DistributedSampler(list(range(8)))",
        "DistributedSampler(list(range(8)), num_replicas=world, rank=index)",
    )
    assert findings(code, "XLA203") == []


def test_sampler_of_a_script_the_xla_launcher_starts_stays_safe():
    code = src(SPAWN).replace(
        "torch.multiprocessing.spawn(worker, (2,), 2)", "torch_xla.launch(worker, args=(2,))"
    )
    code = code.replace("import torch\n", "import torch\nimport torch_xla\n")
    (f,) = findings(code, "XLA203")
    assert f.fix.safe


def test_sampler_of_a_script_without_launcher_waits_for_an_xla_group():
    # torchrun starts it: the runtime numbers the processes once an xla:// group is built.
    code = """
    from torch.utils.data import DistributedSampler


    def main():
        sampler = DistributedSampler(ds)
    """
    (f,) = findings(code, "XLA203")
    assert not f.fix.safe and "torchrun" in f.fix.review_reason


PROBE = """
import os

import torch.multiprocessing as mp
import torch_xla.runtime as xr


def worker(index):
    # One write per line: the two processes share the pipe, and print's separate writes
    # could interleave ("probeprobe 1 0 1").
    os.write(1, f"probe {index} {xr.global_ordinal()} {xr.world_size()}\\n".encode())


if __name__ == "__main__":
    # mp.spawn's launcher; fork spares each child a fresh torch_xla import (the test's time).
    mp.start_processes(worker, nprocs=2, start_method="fork")
"""


@pytest.mark.xla
def test_under_mp_spawn_the_runtime_numbers_every_process_0_of_1():
    with tempfile.TemporaryDirectory(prefix="xla-lens-proof-") as tmp:
        script = Path(tmp) / "probe.py"
        script.write_text(textwrap.dedent(PROBE))
        env = {**os.environ, "PJRT_DEVICE": "CPU"}
        env.pop("CPU_NUM_DEVICES", None)
        run = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
        )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = sorted(line.split() for line in run.stdout.splitlines() if line.startswith("probe"))
    assert lines == [["probe", "0", "0", "1"], ["probe", "1", "0", "1"]]
