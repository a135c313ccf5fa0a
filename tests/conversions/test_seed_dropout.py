"""XLA116 proven by running (protocol: README.md): after conversion --seed still decides the
dropout masks drawn on the XLA device, as torch.manual_seed decided them on CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import fix_source

from .harness import FIXTURES, RunResult, _env, assert_proven, prove, run_script

pytestmark = pytest.mark.xla

FIXTURE = FIXTURES / "seed_dropout.py"
STEPS = 3


def _halves(run: RunResult) -> tuple[list[float], list[float]]:
    """The losses of the two in-process trainings the fixture runs."""
    assert run.returncode == 0, run.stderr[-2500:]
    assert len(run.losses) == 2 * STEPS, run.stdout
    return run.losses[:STEPS], run.losses[STEPS:]


def _run_converted(source: str, folder: Path, seed: int) -> RunResult:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / FIXTURE.name
    script.write_text(source)
    env = _env(STEPS, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1")
    return run_script(script, ["--seed", str(seed)], env=env)


def test_the_seed_decides_dropout_on_xla_again(tmp_path: Path):
    result = prove(FIXTURE, steps=STEPS, args=["--seed", "1"])
    # Dropout draws other masks on XLA than on the CPU: only the shape of the runs compares.
    assert_proven(result, rel_tol=1.0)
    assert "XLA116" in result.applied and "XLA116" not in result.remaining
    assert "torch_xla.manual_seed(torch.initial_seed())" in result.converted_source
    # The original: seeding before each training repeats it exactly.
    first, second = _halves(result.original)  # type: ignore[arg-type]
    assert first == second
    # The conversion keeps that, and the seed still matters: another one, other masks.
    first, second = _halves(result.converted)
    assert first == second
    other, _ = _halves(_run_converted(result.converted_source, tmp_path / "seed2", 2))
    assert other != first


def test_without_the_fix_reseeding_does_not_restart_the_device_stream(tmp_path: Path):
    # The control that shows the test above can fail: every safe fix but XLA116's.
    out = fix_source(
        FIXTURE.read_text(),
        FIXTURE.name,
        accept=lambda f: f.code != "XLA116" and f.fix is not None and f.fix.safe,
    )
    assert out.error is None and "manual_seed(torch.initial_seed())" not in out.source
    first, second = _halves(_run_converted(out.source, tmp_path / "unfixed", 1))
    assert first != second
