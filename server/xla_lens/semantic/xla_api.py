"""The torch_xla API each target speaks (GUIDE.md section E), as code emitters.

``legacy`` is the guide's torch_xla 1.13 API (SageMaker Training Compiler containers);
``modern`` is torch_xla >= 2.5. Every fix writes its torch_xla calls through here so
the two dialects stay in one table.
"""

from __future__ import annotations

from typing import Literal

from .model import Emitter

Target = Literal["legacy", "modern"]


def device(e: Emitter, target: Target) -> str:
    if target == "legacy":
        return f"{e.xm}.xla_device()"
    return f"{e.torch_xla}.device()"


def device_ref(e: Emitter, target: Target) -> str:
    """The script's device variable when it has one, else a device call."""
    return e.model.device_variable or device(e, target)


def sync(e: Emitter, target: Target) -> str:
    if target == "legacy":
        return f"{e.xm}.mark_step()"
    return f"{e.torch_xla}.sync()"


def world_size(e: Emitter, target: Target) -> str:
    if target == "legacy":
        return f"{e.xm}.xrt_world_size()"
    return f"{e.xr}.world_size()"


def global_ordinal(e: Emitter, target: Target) -> str:
    if target == "legacy":
        return f"{e.xm}.get_ordinal()"
    return f"{e.xr}.global_ordinal()"


def local_ordinal(e: Emitter, target: Target) -> str:
    if target == "legacy":
        return f"{e.xm}.get_local_ordinal()"
    return f"{e.xr}.local_ordinal()"


def optimizer_step(e: Emitter, optimizer: str) -> str:
    return f"{e.xm}.optimizer_step({optimizer})"


def launch(e: Emitter, target: Target, fn: str) -> str:
    if target == "legacy":
        xmp = e.module("torch_xla.distributed.xla_multiprocessing", "xmp")
        return f"{xmp}.spawn({fn})"
    return f"{e.torch_xla}.launch({fn})"


def manual_seed(e: Emitter, target: Target, seed: str) -> str:
    """Seed the XLA device's RNG (torch_xla 1.13 has no ``torch_xla.manual_seed``)."""
    if target == "legacy":
        return f"{e.xm}.set_rng_state({seed})"
    return f"{e.torch_xla}.manual_seed({seed})"


def grad_scaler(e: Emitter, target: Target, args: str) -> str:
    """A GradScaler for XLA; ``args`` is the original argument text (may be empty)."""
    if target == "legacy":
        return f"{e.module('torch_xla.amp')}.GradScaler({args})"
    return f'{e.torch}.amp.GradScaler("xla"{", " + args if args else ""})'


# The qualified names of the same API in each dialect, for detection.
DEVICE_CALLS = {"torch_xla.core.xla_model.xla_device", "torch_xla.device"}
SYNC_CALLS = {"torch_xla.core.xla_model.mark_step", "torch_xla.sync"}
