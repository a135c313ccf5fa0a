"""Proof by running: convert a fixture, run the original on the CPU and the conversion under
torch_xla (PJRT CPU), and compare what both printed (the protocol in README.md).

    result = prove(FIXTURES / "basic_picker.py")
    assert_proven(result)
"""

from __future__ import annotations

import ast
import contextlib
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xla_lens.engine import fix_source
from xla_lens.rules.base import Finding

from . import warm_python

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
CONTROLS = HERE / "controls"

LOSS_LINE = re.compile(r"^xla-lens-loss:\s*(\S+)\s*$", re.M)
DEVICE_LINE = re.compile(r"^xla-lens-param-device:\s*(\S+)\s*$", re.M)
MP_FN_LINE = re.compile(r"^xla-lens-mp-fn:\s*started\s*$", re.M)

# Maps CUDA placement onto the CPU for the original's run, for fixtures that hard-code
# `.cuda()` / `"cuda"` and so cannot otherwise produce a CPU baseline (opt-in: cuda_shim=True).
# Installed as sitecustomize, so processes the script spawns get it too.
CUDA_SHIM = r"""
import torch

def _cpu(d):
    if (isinstance(d, int) and not isinstance(d, bool)) or (
        isinstance(d, str) and d.startswith("cuda")
    ):
        return "cpu"
    if isinstance(d, torch.device) and d.type == "cuda":
        return torch.device("cpu")
    return d

def _patch_to(cls):
    orig = cls.to
    def to(self, *args, **kwargs):
        args = tuple(_cpu(a) for a in args)
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"])
        return orig(self, *args, **kwargs)
    cls.to = to

torch.Tensor.cuda = lambda self, *a, **k: self.cpu()
torch.nn.Module.cuda = lambda self, *a, **k: self.cpu()
torch.cuda.set_device = lambda *a, **k: None
_patch_to(torch.Tensor)
_patch_to(torch.nn.Module)
"""


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    losses: list[float] = field(default_factory=list)
    param_devices: list[str] = field(default_factory=list)
    mp_fn_started: int = 0

    @property
    def param_device(self) -> str | None:
        return self.param_devices[-1] if self.param_devices else None


@dataclass
class ProofResult:
    fixture: Path
    converted_source: str
    applied: list[str]
    # Codes of findings left with no safe fix after converting.
    remaining: list[str]
    original: RunResult | None
    converted: RunResult

    def describe(self) -> str:
        parts = [f"fixture {self.fixture.name}; applied {self.applied}; left {self.remaining}"]
        for name, run in (("original", self.original), ("converted", self.converted)):
            if run is None:
                continue
            parts.append(
                f"{name}: rc={run.returncode} losses={run.losses} devices={run.param_devices}"
                f" mp_fn={run.mp_fn_started}\n--- stderr tail ---\n{run.stderr[-2500:]}"
            )
        parts.append(f"--- converted source ---\n{self.converted_source}")
        return "\n".join(parts)


def parse_protocol(stdout: str) -> tuple[list[float], list[str], int]:
    losses = [float(v) for v in LOSS_LINE.findall(stdout)]
    return losses, DEVICE_LINE.findall(stdout), len(MP_FN_LINE.findall(stdout))


def free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(steps: int | None, **extra: str) -> dict[str, str]:
    # A caller's PJRT/XLA settings would change what each run means; start clean.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PJRT_", "XLA_", "PT_XLA"))}
    env.update(CUDA_VISIBLE_DEVICES="", PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1")
    # xla:// and env:// rendezvous default to port 12355: two proofs on two test workers
    # would collide (EADDRINUSE).
    env["MASTER_PORT"] = str(free_port())
    if steps is not None:
        env["XLA_LENS_STEPS"] = str(steps)
    env.update(extra)
    return env


def run_script(
    script: Path,
    args: Sequence[str] = (),
    *,
    env: dict[str, str],
    timeout: int = 240,
    cuda_shim: bool = False,
) -> RunResult:
    if cuda_shim:
        shim_dir = script.parent / ".xla_lens_shim"
        shim_dir.mkdir(exist_ok=True)
        (shim_dir / "sitecustomize.py").write_text(CUDA_SHIM)
        env = {
            **env,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(shim_dir), env.get("PYTHONPATH")])),
        }
    elif warm_python.enabled():
        warm = warm_python.run_warm(script, args, env, script.parent, timeout)
        if warm is not None:
            returncode, stdout, stderr, timed_out = warm
            if timed_out:
                return RunResult(
                    124, stdout, f"timed out after {timeout}s", *parse_protocol(stdout)
                )
            return RunResult(returncode, stdout, stderr, *parse_protocol(stdout))
    # A session of its own, so a timeout also ends the workers a launcher spawned.
    proc = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=script.parent,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, _ = proc.communicate()
        return RunResult(124, stdout, f"timed out after {timeout}s", *parse_protocol(stdout))
    finally:
        # Workers left behind by a launcher that exited early must not outlive the run.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return RunResult(proc.returncode, stdout, stderr, *parse_protocol(stdout))


def convert(
    source: str,
    name: str,
    target: str = "modern",
    unsafe: bool = False,
    accept_review: Collection[str] | None = None,
    consistent: bool = True,
) -> tuple[str, list[str], list[str]]:
    """Safe fixes only, as Convert does (``unsafe``: also those marked for review, as
    ``fix --unsafe-fixes``; ``accept_review``: the review fixes of these rule codes only, as a
    reviewer who accepts those quick fixes and declines the others); asserts the output parses
    and is a fixpoint."""
    accept = None
    if accept_review is not None:
        unsafe = True
        codes = tuple(accept_review)

        def accept(f: Finding) -> bool:
            return f.fix is not None and (f.fix.safe or f.code.startswith(codes))

    kwargs = {"unsafe": unsafe, "accept": accept, "consistent": consistent}
    out = fix_source(source, name, target=target, **kwargs)
    assert out.error is None, f"{name}: fix failed: {out.error}"
    ast.parse(out.source)
    again = fix_source(out.source, name, target=target, **kwargs)
    assert again.source == out.source, f"{name}: fixing again changed the output"
    return out.source, out.applied, [f.code for f in out.remaining]


def _copy_beside(files: Sequence[Path], folder: Path) -> None:
    for f in map(Path, files):
        if f.is_dir():
            shutil.copytree(f, folder / f.name, dirs_exist_ok=True)
        else:
            shutil.copy(f, folder / f.name)


def prove(
    fixture_path: str | Path,
    target: str = "modern",
    steps: int | None = None,
    *,
    args: Sequence[str] = (),
    run_original: bool = True,
    cuda_shim: bool = False,
    timeout: int = 240,
    workdir: str | Path | None = None,
    extra_files: Sequence[Path] = (),
    baseline: str | Path | None = None,
    unsafe: bool = False,
    accept_review: Collection[str] | None = None,
    in_place: bool = False,
    consistent: bool = True,
) -> ProofResult:
    """Run the original on the CPU (unless ``run_original`` is False), convert it, run the
    conversion under torch_xla PJRT CPU, and return both runs. ``steps`` reaches the fixture
    as ``XLA_LENS_STEPS``; ``args`` are passed to both runs (the same command line);
    ``extra_files`` (data, sibling modules) are copied, unconverted, beside both scripts;
    ``baseline`` replaces the original for the CPU run only (e.g. nccl -> gloo);
    ``in_place``: analysed at its own path, so the sibling modules beside it are read;
    ``consistent=False``: the chosen fixes go in alone, as quick fixes applied one by one in
    the editor do (no consistency check, ``engine/consistency.py``)."""
    fixture = Path(fixture_path).resolve()
    source = fixture.read_text()
    converted_source, applied, remaining = convert(
        source,
        str(fixture) if in_place else fixture.name,
        target,
        unsafe,
        accept_review,
        consistent,
    )
    with tempfile.TemporaryDirectory(prefix="xla-lens-proof-") as tmp:
        base = Path(workdir) if workdir else Path(tmp)
        original = None
        if run_original:
            orig_dir = base / "original"
            orig_dir.mkdir(parents=True, exist_ok=True)
            _copy_beside(extra_files, orig_dir)
            orig_script = orig_dir / fixture.name
            orig_script.write_text(Path(baseline).read_text() if baseline else source)
            # Transformers moves models to XLA by itself when torch_xla imports: keep it off.
            original = run_script(
                orig_script,
                args,
                env=_env(steps, USE_TORCH_XLA="0"),
                timeout=timeout,
                cuda_shim=cuda_shim,
            )
        conv_dir = base / "converted"
        conv_dir.mkdir(parents=True, exist_ok=True)
        _copy_beside(extra_files, conv_dir)
        conv_script = conv_dir / fixture.name
        conv_script.write_text(converted_source)
        converted = run_script(
            conv_script,
            args,
            env=_env(steps, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1"),
            timeout=timeout,
        )
    return ProofResult(fixture, converted_source, applied, remaining, original, converted)


def assert_proven(
    result: ProofResult,
    rel_tol: float = 0.02,
    *,
    expect_mp_fn: bool = False,
    min_steps: int = 1,
) -> None:
    """Both runs exit 0, print the same number of finite losses, each within ``rel_tol``
    (2 % allows bf16 autocast), the converted parameters sit on an XLA device and the
    original's on the CPU; with ``expect_mp_fn``, the converted run started ``_mp_fn``."""
    conv, orig = result.converted, result.original
    why = result.describe
    assert conv.returncode == 0, f"converted run failed\n{why()}"
    assert len(conv.losses) >= min_steps, f"converted run printed no losses\n{why()}"
    assert all(math.isfinite(v) for v in conv.losses), f"non-finite loss\n{why()}"
    assert conv.param_device and conv.param_device.startswith("xla"), (
        f"converted params not on XLA: {conv.param_devices}\n{why()}"
    )
    if expect_mp_fn:
        assert conv.mp_fn_started >= 1, f"_mp_fn never started\n{why()}"
    if orig is None:
        return
    assert orig.returncode == 0, f"original run failed\n{why()}"
    assert orig.param_device == "cpu", f"original params on {orig.param_devices}\n{why()}"
    assert len(orig.losses) == len(conv.losses), f"step counts differ\n{why()}"
    for i, (a, b) in enumerate(zip(orig.losses, conv.losses, strict=True)):
        assert math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-6), (
            f"step {i}: original {a} vs converted {b} (rel_tol {rel_tol})\n{why()}"
        )
