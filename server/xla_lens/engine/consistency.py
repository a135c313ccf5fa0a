"""Convert's result must run somewhere: the device and the distributed setup move together.

Each safe fix is safe on its own terms, yet two groups of them only make sense together.
Held-out 137 (a torchrun DDP script): the ``.cuda()`` moves became XLA moves while
``DDP(model, device_ids=[local_rank])`` over NCCL waited for review, so DDP failed when it
was built; the script had trained on its GPUs and now ran nowhere. Held-out 138 (FLatten
Transformer) the other way round: the launcher, the process group, the ranks and the AMP
changes were applied while every device move waited for review, leaving an XLA launcher and
an XLA autocast around a model still on CUDA.

So after the rounds, ``fix_source`` asks two questions of what it produced:
- did a device move reach XLA while DDP still names a CUDA device or NCCL stays? Then the
  device moves (and the allocations that place on XLA) wait too;
- did a device move reach XLA while a CUDA-availability flag that guards other placements is
  left for a hand edit (XLA101 without a fix)? What it guards stays on the CPU, so the device
  moves wait too (held-out 182);
- did nothing reach XLA, while fixes that only make sense on XLA (launcher, process group,
  ranks, CUDA-only calls, GradScaler, DataParallel, sync-free optimizers) went in? Then
  those wait too.
The rounds are run again without the group held back; the held fixes are reported for review
with the reason. ``fix --unsafe-fixes`` (every fix, on request) asks the same questions of its
result, a device choice left to the user's hand counting as one not made (held-out 170: three
DDP tutorials whose CPU-fallback pickers needed a hand edit got the xla process group and the
launcher anyway, and DDP failed on the CPU model at once).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from ..rules.base import Finding, Severity
from ..rules.parts.autocast_device_type import XLA_CASE_TITLE
from ..semantic.cuda_flag_idioms import FLAG_LEFT

DEVICE_CODES = frozenset({"XLA101", "XLA112"})
# Fixes a script still running on CUDA must not get: they assume the XLA device/runtime.
XLA_ONLY_CODES = frozenset(
    {
        # An "xla" autocast around a model still on CUDA casts nothing: mixed precision
        # silently lost (held-out 154's esm2 classifier, `autocast(device_type=args.device)`
        # converted while the `--device cuda` default waited for review).
        "XLA102",
        "XLA103",  # GradScaler
        "XLA104",  # sync-free optimizers
        # MpDeviceLoader puts every batch on the XLA device: under a CUDA model each batch
        # went CPU -> XLA -> CUDA, an XLA runtime per worker (held-out 146, CurricularFace).
        "XLA106",
        "XLA110",  # DataParallel
        "XLA202",  # ranks
        "XLA203",  # samplers
        "XLA204",  # launcher
        "XLA205",  # process group, DDP
        "XLA206",  # reductions
        "XLA403",  # CUDA-only calls: a script still on CUDA keeps them
    }
)
CUDA_DDP = ("DistributedDataParallel on XLA: ", "NCCL is CUDA-only")

HELD_DEVICE = (
    "Convert held the device moves back: DistributedDataParallel still names a CUDA device "
    "or NCCL (XLA205, waiting for review), and a model on the XLA device under it fails when "
    "DDP is built; review the DDP change first, then the device"
)
HELD_FLAG = (
    "Convert held the device moves back: a CUDA-availability flag that decides where other "
    "code places its tensors needs a change by hand (XLA101, no automatic fix), so what it "
    "guards would stay on the CPU while these moves go to the XLA device; make the flag true "
    "on the XLA host (placing on torch_xla.device() where it is true), then convert the device"
)
HELD_XLA_ONLY = (
    "Convert held this back: no device move of the script reached the XLA device (XLA101 waits "
    "for review or for a change by hand), so the script still runs where it ran (CUDA or the "
    "CPU), and this change belongs with the move to XLA; make the device change first"
)


def _xla_only(f: Finding) -> bool:
    if f.code == "XLA102" and f.fix is not None and f.fix.title.startswith(XLA_CASE_TITLE):
        return False  # an "xla" case added to a device-type choice is inert until then
    return f.code in XLA_ONLY_CODES


# What sends tensors through the process group: with NCCL left, XLA tensors there fail. A
# group nothing sends through (replicas that train apart) is created lazily and never fails.
_SENDS = re.compile(
    r"\bDistributedDataParallel\b|\b(all_reduce|all_gather\w*|reduce_scatter\w*|broadcast|reduce)\("
)


def _cuda_ddp_left(findings: list[Finding], text: str) -> bool:
    for f in findings:
        if f.code != "XLA205" or (f.fix is not None and f.fix.safe):
            continue
        if f.message.startswith(CUDA_DDP[0]) and "names a CUDA device" in f.message:
            return True
        if f.message.startswith(CUDA_DDP[1]) and _SENDS.search(text):
            return True
    return False


def _blocked_flag_left(findings: list[Finding]) -> bool:
    """A CUDA-availability flag that guards placements is left for a change by hand (XLA101
    without a fix): what it guards stays on the CPU on an XLA host, so device moves that reach
    XLA elsewhere mix devices (held-out 182's GRU-CRF tagger: its tensor-type aliases went to
    XLA under --unsafe-fixes while `if CUDA: model.cuda()` kept the model on the CPU)."""
    return any(f.code == "XLA101" and f.fix is None and FLAG_LEFT in f.message for f in findings)


def _reaches_xla(f: Finding) -> bool:
    """The applied device fix writes the XLA device (``torch_xla.device()``, ``"xla"``); one
    that only names the script's own device variable (``.to(local_rank)`` -> ``.to(device)``,
    held-out 154's scBERT, where ``device`` stays CUDA) moves nothing to XLA."""
    return f.fix is not None and any("xla" in getattr(op, "code", "") for op in f.fix.ops)


def _device_left(findings: list[Finding], unsafe: bool) -> bool:
    """A device choice is still to be made: one waiting for review, or (after every fix,
    ``--unsafe-fixes``) one that needs a change by hand."""
    return any(
        f.code == "XLA101" and f.severity <= Severity.WARNING and (f.fix is not None or unsafe)
        for f in findings
    )


def held_group(
    applied: list[Finding], remaining: list[Finding], text: str, unsafe: bool = False
) -> tuple[Callable[[Finding], bool], str] | None:
    """Which applied fixes must wait (a predicate) and why, or None when the result is
    consistent. ``applied``: every fix the rounds applied; ``remaining``: the findings of the
    result ``text`` that still need a person or a review; ``unsafe``: the rounds applied the
    review fixes too (what is left needs a change by hand)."""
    moved = any(f.code in DEVICE_CODES and _reaches_xla(f) for f in applied)
    if moved and _cuda_ddp_left(remaining, text):
        return (lambda f: f.code in DEVICE_CODES), HELD_DEVICE
    if moved and _blocked_flag_left(remaining):
        return (lambda f: f.code in DEVICE_CODES), HELD_FLAG
    if not moved and _device_left(remaining, unsafe) and any(_xla_only(f) for f in applied):
        if any(f.code == LOADER_CODE for f in applied):
            # A step closure runs only at a sync; where XLA106's MpDeviceLoader was to give
            # the loop its sync, holding the loader back leaves the closure unrun: the report
            # it defers is never written (held-out 165's clasp, its TensorBoard loss).
            return (lambda f: _xla_only(f) or _step_closure(f)), HELD_XLA_ONLY
        return _xla_only, HELD_XLA_ONLY
    return None


LOADER_CODE = "XLA106"


def may_hold(findings: list[Finding], text: str) -> bool:
    """Whether `fix` could hold a safe fix back, read from one analysis's findings (its safe
    fixes as applied, the others as left): `check` then runs `fix`'s rounds to know which,
    so its count of fixable findings agrees with what `fix` changes (held-out 176's DETR:
    "1 fixable" beside "0 files would change"). Cheap, and only a trigger: the rounds decide."""
    applied = [f for f in findings if f.fix is not None and f.fix.safe]
    if not applied:
        return False
    left = [f for f in findings if not (f.fix is not None and f.fix.safe)]
    return held_group(applied, left, text) is not None


def _step_closure(f: Finding) -> bool:
    return (
        f.code == "XLA401"
        and f.fix is not None
        and any("add_step_closure" in getattr(op, "code", "") for op in f.fix.ops)
    )


def as_held(f: Finding, reason: str) -> Finding:
    assert f.fix is not None
    return replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
