"""The sample scripts run as they are and print one parseable loss line per training step."""

from __future__ import annotations

import math
import os
import py_compile
import re
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
STEP_LINE = re.compile(r"^step=(\d+) loss=(-?\d+\.\d{6}|nan|inf|-inf)$")


def run_sample(name: str, *args: str, env: dict[str, str] | None = None) -> list[tuple[int, float]]:
    full_env = dict(os.environ)
    # A stray CUDA device or PJRT setting from the caller would change what "as is" means.
    full_env.pop("PJRT_DEVICE", None)
    full_env["CUDA_VISIBLE_DEVICES"] = ""
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, str(SAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=full_env,
    )
    assert proc.returncode == 0, f"{name} exited {proc.returncode}\n{proc.stderr[-4000:]}"
    steps = []
    for line in proc.stdout.splitlines():
        if line.startswith("step="):
            m = STEP_LINE.match(line)
            assert m, f"unparseable step line from {name}: {line!r}"
            steps.append((int(m.group(1)), float(m.group(2))))
    return steps


def check_training(steps: list[tuple[int, float]], n: int, first: int) -> None:
    assert [s for s, _ in steps] == list(range(first, first + n))
    losses = [loss for _, loss in steps]
    assert all(math.isfinite(x) for x in losses), losses
    assert len(set(losses)) > 1, f"loss never changed: {losses}"


def test_mnist_cuda_runs_on_cpu(tmp_path):
    out = tmp_path / "model.pt"
    check_training(run_sample("mnist_cuda.py", "--steps", "3", "--out", str(out)), 3, first=0)
    assert out.stat().st_size > 0


def test_mnist_amp_runs_on_cpu(tmp_path):
    out = tmp_path / "model.pt"
    check_training(run_sample("mnist_amp.py", "--steps", "3", "--out", str(out)), 3, first=0)
    assert out.stat().st_size > 0


def test_hf_trainer_runs_on_cpu(tmp_path):
    # With torch_xla importable, transformers moves the model to the XLA device by itself
    # (and its default fused AdamW then fails there); the CPU baseline must not use it.
    steps = run_sample(
        "hf_trainer.py",
        "--steps",
        "3",
        "--output-dir",
        str(tmp_path),
        env={"USE_TORCH_XLA": "0"},
    )
    # The Trainer counts optimizer steps from 1.
    check_training(steps, 3, first=1)


@pytest.mark.xla
def test_xla_recompile_runs_on_pjrt_cpu():
    steps = run_sample("xla_recompile.py", "--steps", "3", env={"PJRT_DEVICE": "CPU"})
    check_training(steps, 3, first=0)


@pytest.mark.parametrize("marker", ["shape changes -> recompilation", "host read"])
def test_xla_recompile_marks_each_problem_on_one_line(marker):
    # The runner tests locate these lines by their marker: each must occur exactly once.
    lines = (SAMPLES / "xla_recompile.py").read_text().splitlines()
    hits = [line for line in lines if f"# deliberate: {marker}" in line]
    assert len(hits) == 1, hits


@pytest.mark.parametrize("name", ["ddp_cuda.py", "xla_forever.py"])
def test_unrun_samples_compile(name, tmp_path):
    py_compile.compile(str(SAMPLES / name), cfile=str(tmp_path / "c.pyc"), doraise=True)
