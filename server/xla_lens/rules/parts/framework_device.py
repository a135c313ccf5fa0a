"""Keep a script Lightning runs device-agnostic: no fix writes torch_xla code into it.

A Fabric or Trainer script (``frameworks.Ownership.device_agnostic``) runs on whatever device
the framework picks: CUDA, CPU or XLA. ``.to(torch_xla.device())``, a step closure or an
``xm`` call written into it ties every run to torch_xla (``import torch_xla`` fails on a CUDA
or CPU machine without it, and on one with it the model leaves the device Fabric set up). The
engine runs this once over every finding: a fix that writes XLA code is dropped, and the
finding says what to write instead (GUIDE I). Rules whose whole job the framework does
(XLA107's sync, XLA111's backend) stay quiet there by themselves.
"""

from __future__ import annotations

from dataclasses import replace

from ...semantic.frameworks import ownership
from ...semantic.model import ScriptModel
from ..base import Finding
from .xla_branch_filter import XLA_CODE


def _writes_xla(finding: Finding) -> bool:
    assert finding.fix is not None
    return any(XLA_CODE.search(str(getattr(op, "code", ""))) for op in finding.fix.ops)


def leave_framework_device(model: ScriptModel, findings: list[Finding]) -> list[Finding]:
    who = ownership(model).device_agnostic
    if who is None:
        return findings
    out = []
    for f in findings:
        if f.fix is not None and _writes_xla(f):
            manual = (
                f"{who} picks the device of this script at run time: torch_xla code here "
                f"({f.fix.title}) would break its CUDA/CPU runs; use the framework's device "
                "instead (`fabric.device`, `fabric.to_device(x)`, or `self.device` in a "
                "LightningModule)"
            )
            f = replace(f, fix=None, manual=manual)
        out.append(f)
    return out


def framework_read_manual(model: ScriptModel) -> str | None:
    """Advice without torch_xla for a script Lightning runs on any device (None: not one)."""
    who = ownership(model).device_agnostic
    if who is None:
        return None
    return (
        f"{who} picks the device, so torch_xla code (a step closure) would break its CUDA/CPU "
        "runs: keep the value on the device (`total += loss.detach()`) and read it only at a "
        "logging interval, where one extra graph run per interval is cheap"
    )


__all__ = ["framework_read_manual", "leave_framework_device"]
