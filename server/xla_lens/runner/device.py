"""Which PJRT device a run uses, and why, found by probing the script's own interpreter.

torch_xla 2.9 has no CUDA PJRT device (XLA:GPU was deprecated in 2.8 and removed in 2.9); its
devices are TPU, NEURON and CPU, and CPU always works. So a visible GPU is not enough: the probe
asks the interpreter which torch_xla it has (package metadata only, importing torch_xla takes
seconds) and the choice says plainly when the GPU cannot be used and what would enable it.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field

DEVICES = ("CPU", "CUDA", "TPU", "NEURON")

# Runs in the target interpreter: stdlib only, no torch import.
_PROBE = r"""
import glob, json, os, shutil, subprocess, sys
from importlib import metadata
def ver(name):
    try:
        return metadata.version(name)
    except Exception:
        return None
gpus = []
smi = shutil.which("nvidia-smi")
if smi:
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10).stdout
        gpus = [l.strip() for l in out.splitlines() if l.startswith("GPU ")]
    except Exception:
        pass
print(json.dumps({
    "python": sys.version.split()[0],
    "executable": sys.executable,
    "torch": ver("torch"),
    "torch_xla": ver("torch_xla") or ver("torch-xla"),
    "cuda_plugin": ver("torch_xla_cuda_plugin") or ver("torch-xla-cuda-plugin"),
    "libtpu": ver("libtpu") or ver("libtpu-nightly"),
    "gpu_names": gpus,
    "gpu_dev": bool(glob.glob("/dev/nvidia[0-9]*")),
    "tpu_dev": bool(glob.glob("/dev/accel[0-9]*") or glob.glob("/dev/vfio/[0-9]*")),
    "neuron_dev": bool(glob.glob("/dev/neuron[0-9]*")),
}))
"""


@dataclass
class Probe:
    python: str
    executable: str
    torch: str | None
    torch_xla: str | None
    cuda_plugin: str | None = None
    libtpu: str | None = None
    gpu_names: list[str] = field(default_factory=list)
    gpu_dev: bool = False
    tpu_dev: bool = False
    neuron_dev: bool = False

    @property
    def gpu_visible(self) -> bool:
        return bool(self.gpu_names) or self.gpu_dev

    @property
    def gpu_models(self) -> str:
        """'NVIDIA H200' from nvidia-smi's 'GPU 0: NVIDIA H200 (UUID: GPU-...)' lines."""
        names = [re.sub(r"^GPU \d+:\s*|\s*\(UUID:.*\)$", "", n) for n in self.gpu_names]
        return ", ".join(dict.fromkeys(n for n in names if n))


@dataclass
class DeviceChoice:
    device: str | None  # None: the run must be refused
    reason: str
    probe: Probe | None


class ProbeError(RuntimeError):
    pass


async def probe_interpreter(interpreter: str, timeout: float = 60.0) -> Probe:
    try:
        proc = await asyncio.create_subprocess_exec(
            interpreter,
            "-c",
            _PROBE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
        )
    except OSError as exc:
        raise ProbeError(f"cannot start the interpreter {interpreter!r}: {exc}") from exc
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError as exc:
        proc.kill()
        await proc.wait()
        raise ProbeError(f"the interpreter {interpreter!r} did not answer in {timeout}s") from exc
    if proc.returncode != 0:
        raise ProbeError(f"probing {interpreter!r} failed: {err.decode(errors='replace').strip()}")
    data = json.loads(out.decode().strip().splitlines()[-1])
    return Probe(**data)


def _version(text: str | None) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _cuda_capability(probe: Probe) -> tuple[bool, str]:
    """Whether this torch_xla can run XLA on an NVIDIA GPU, and the plain-words reason."""
    v = probe.torch_xla
    if _version(v) >= (2, 9):
        return False, (
            f"torch_xla {v} has no CUDA PJRT device (XLA:GPU was deprecated in 2.8 and "
            "removed in 2.9)"
        )
    if probe.cuda_plugin:
        return True, f"torch_xla {v} with the CUDA plugin {probe.cuda_plugin}"
    return False, (
        f"torch_xla {v} is installed without its CUDA plugin (torch_xla_cuda_plugin), "
        "so it has no CUDA PJRT device"
    )


_GPU_HINT = (
    "To run on the GPU: use a torch_xla <= 2.8 build with CUDA support "
    "(torch_xla + torch_xla_cuda_plugin of the same version) in the run interpreter"
)


def _missing_runtime(probe: Probe) -> str | None:
    """Why this interpreter cannot run torch_xla at all, with what to do, or None."""
    where = f"{probe.executable} (torch {probe.torch or 'not installed'})"
    other = "or run with another interpreter (--interpreter, the xla-lens.interpreter setting)"
    if not probe.torch_xla:
        gpu = (
            f"; torch_xla 2.9 has no CUDA device, so the {probe.gpu_models or 'GPU'} "
            "will not be used"
            if probe.gpu_visible
            else ""
        )
        return (
            f"torch_xla is not installed in {where}. Install it there with "
            f"`pip install torch==2.9.0 torch_xla==2.9.0` (it runs on CPU PJRT{gpu}), {other}"
        )
    if probe.torch and _version(probe.torch) != _version(probe.torch_xla):
        return (
            f"torch_xla {probe.torch_xla} needs torch {'.'.join(map(str, _version(probe.torch_xla)))}"
            f" exactly, but {where} has torch {probe.torch}: importing torch_xla would fail. "
            f"Install matching versions (`pip install torch=={probe.torch_xla} "
            f"torch_xla=={probe.torch_xla}`), {other}"
        )
    return None


def choose_device(probe: Probe, requested: str = "auto") -> DeviceChoice:
    requested = requested.upper() if requested.lower() != "auto" else "auto"
    if requested == "GPU":
        requested = "CUDA"
    if missing := _missing_runtime(probe):
        return DeviceChoice(None, missing, probe)
    if requested not in ("auto", *DEVICES):
        return DeviceChoice(
            None, f"unknown device {requested!r}: use auto, {', '.join(DEVICES)}", probe
        )
    gpu = probe.gpu_models or "an NVIDIA GPU"
    if requested == "CPU":
        return DeviceChoice("CPU", "CPU PJRT was requested", probe)
    if requested == "CUDA":
        able, why = _cuda_capability(probe)
        if not probe.gpu_visible:
            return DeviceChoice(None, "PJRT_DEVICE=CUDA was requested but no GPU is visible", probe)
        if not able:
            return DeviceChoice(
                None, f"PJRT_DEVICE=CUDA was requested but {why}. {_GPU_HINT}", probe
            )
        return DeviceChoice("CUDA", f"CUDA was requested and {gpu} is visible ({why})", probe)
    if requested == "TPU" or (requested == "auto" and probe.tpu_dev):
        if probe.tpu_dev:
            return DeviceChoice("TPU", "a TPU is attached (/dev/accel* or /dev/vfio)", probe)
        return DeviceChoice(None, "PJRT_DEVICE=TPU was requested but no TPU is attached", probe)
    if requested == "NEURON" or (requested == "auto" and probe.neuron_dev):
        if probe.neuron_dev:
            return DeviceChoice("NEURON", "an AWS Neuron device is attached (/dev/neuron*)", probe)
        return DeviceChoice(
            None, "PJRT_DEVICE=NEURON was requested but no Neuron device is attached", probe
        )
    if probe.gpu_visible:
        able, why = _cuda_capability(probe)
        if able:
            return DeviceChoice("CUDA", f"{gpu} is visible and {why}", probe)
        return DeviceChoice(
            "CPU", f"{gpu} is visible, but {why}: running on CPU PJRT. {_GPU_HINT}", probe
        )
    return DeviceChoice(
        "CPU", "no GPU, TPU or Neuron device is visible: running on CPU PJRT", probe
    )
