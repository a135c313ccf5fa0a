"""Converting the samples: exact expected output for both targets, idempotence, nothing
fixable left behind, and — the real proof — the converted scripts run under torch_xla
(PJRT CPU) and train like the originals."""

from __future__ import annotations

import ast
import math
import os
import re
from pathlib import Path

import pytest
from xla_lens.engine import analyze, fix_source

from tests.conversions.harness import RunResult, free_port, run_script

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
GOLDEN = Path(__file__).resolve().parent / "golden"
CONVERTED = ["mnist_cuda", "mnist_amp", "ddp_cuda", "hf_trainer"]
STEP_LINE = re.compile(r"^step=(\d+) loss=(-?\d+\.\d+)$", re.M)


def convert(name: str, target: str) -> str:
    return fix_source((SAMPLES / f"{name}.py").read_text(), f"{name}.py", target=target).source


@pytest.mark.parametrize("target", ["legacy", "modern"])
@pytest.mark.parametrize("name", CONVERTED)
def test_conversion_matches_golden_and_is_a_fixpoint(name: str, target: str) -> None:
    out = convert(name, target)
    ast.parse(out)
    golden = GOLDEN / f"{name}.{target}.py"
    if os.environ.get("XLA_LENS_UPDATE_GOLDEN"):
        golden.write_text(out)
    assert out == golden.read_text(), f"conversion changed; review and regenerate {golden.name}"
    assert fix_source(out, f"{name}.py", target=target).source == out
    leftover = [f for f in analyze(out, target=target).findings if f.fix is not None and f.fix.safe]
    assert leftover == [], [(f.code, f.message) for f in leftover]


@pytest.mark.parametrize("name", CONVERTED)
def test_original_sample_has_findings(name: str) -> None:
    codes = {
        f.code for f in analyze((SAMPLES / f"{name}.py").read_text(), target="modern").findings
    }
    assert codes, name


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PJRT_", "XLA_", "PT_XLA"))}
    env.update(CUDA_VISIBLE_DEVICES="", PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1")
    env.update(MASTER_PORT=str(free_port()), **extra)
    return env


def _losses(stdout: str) -> list[tuple[int, float]]:
    return [(int(s), float(v)) for s, v in STEP_LINE.findall(stdout)]


def _run(script: Path, *args: str, timeout: int = 300, **env: str) -> list[tuple[int, float]]:
    proc = run_script(script, args, env=_env(**env), timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return _losses(proc.stdout)


def _write(tmp_path: Path, name: str, target: str = "modern") -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(convert(name, target))
    return path


@pytest.mark.xla
def test_converted_native_loop_trains_like_the_original(tmp_path: Path) -> None:
    steps = ["--steps", "6", "--out", str(tmp_path / "ckpt.pt")]
    original = _run(SAMPLES / "mnist_cuda.py", *steps, USE_TORCH_XLA="0")
    converted = _run(_write(tmp_path, "mnist_cuda"), *steps, PJRT_DEVICE="CPU")
    assert [s for s, _ in converted] == [s for s, _ in original] == list(range(6))
    for (_, a), (_, b) in zip(original, converted, strict=True):
        assert math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4), (original, converted)
    assert (tmp_path / "ckpt.pt").stat().st_size > 0


@pytest.mark.xla
def test_converted_amp_loop_runs_under_xla_in_bf16(tmp_path: Path) -> None:
    losses = _run(
        _write(tmp_path, "mnist_amp"),
        "--steps",
        "4",
        "--out",
        str(tmp_path / "c.pt"),
        PJRT_DEVICE="CPU",
    )
    assert [s for s, _ in losses] == [0, 1, 2, 3]
    assert all(math.isfinite(v) for _, v in losses)


@pytest.mark.xla
def test_converted_trainer_script_runs_under_xla(tmp_path: Path) -> None:
    losses = _run(_write(tmp_path, "hf_trainer"), "--steps", "3", PJRT_DEVICE="CPU")
    assert len(losses) == 3 and all(math.isfinite(v) for _, v in losses)


ALL_REDUCE_PROBE = """
import torch, torch_xla, torch_xla.core.xla_model as xm

def _mp_fn(index):
    t = torch.ones(2, device=torch_xla.device())
    xm.all_reduce("sum", [t])
    torch_xla.sync()
    print("all_reduce ok", t.cpu().tolist(), flush=True)

if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
"""
KNOWN_CPU_COLLECTIVE_BUG = "Termination timeout for `all reduce RendezvousKey"


def _launch_converted_ddp(tmp_path: Path, devices: int) -> RunResult:
    _write(tmp_path, "ddp_cuda")
    launcher = tmp_path / "launch.py"
    # torch_xla.launch calls the converted script's _mp_fn once per device (GUIDE A.2/C.5).
    launcher.write_text(
        "import sys\n"
        "import torch_xla\n"
        f"sys.argv = ['ddp_cuda.py', '--steps', '3', '--out', {str(tmp_path / 'd.pt')!r}]\n"
        "import ddp_cuda\n\n"
        "if __name__ == '__main__':\n"
        "    torch_xla.launch(ddp_cuda._mp_fn)\n"
    )
    return run_script(
        launcher, env=_env(PJRT_DEVICE="CPU", CPU_NUM_DEVICES=str(devices)), timeout=420
    )


@pytest.mark.xla
def test_converted_ddp_script_runs_under_the_xla_launcher(tmp_path: Path) -> None:
    proc = _launch_converted_ddp(tmp_path, devices=1)
    assert proc.returncode == 0, proc.stderr[-3000:]
    losses = _losses(proc.stdout)
    assert [s for s, _ in losses] == [0, 1, 2]
    assert all(math.isfinite(v) for _, v in losses)
    assert (tmp_path / "d.pt").stat().st_size > 0


@pytest.mark.xla
def test_converted_ddp_script_on_two_cpu_devices(tmp_path: Path) -> None:
    # torch_xla 2.9's CPU client runs the two devices as threads of one process, and its
    # cross-replica all-reduce never completes there: both threads wait at the rendezvous
    # until XLA aborts the process after 10 s (GUIDE G). Probe that with a four-line
    # all_reduce first, so this test runs the real two-device sample wherever it can work.
    probe = tmp_path / "probe.py"
    probe.write_text(ALL_REDUCE_PROBE)
    result = run_script(probe, env=_env(PJRT_DEVICE="CPU", CPU_NUM_DEVICES="2"), timeout=300)
    if result.returncode != 0 and KNOWN_CPU_COLLECTIVE_BUG in result.stderr:
        pytest.xfail(
            "torch_xla CPU all_reduce across 2 threaded devices aborts (rendezvous timeout)"
        )
    assert result.returncode == 0, result.stderr[-3000:]
    proc = _launch_converted_ddp(tmp_path, devices=2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [s for s, _ in _losses(proc.stdout)] == [0, 1, 2]
