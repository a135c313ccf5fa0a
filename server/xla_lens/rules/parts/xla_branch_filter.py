"""Leave alone the code a conversion must not touch: what never runs on the XLA device.

The engine runs this once over every finding (semantic/xla_branches.py finds the code):

* On the CUDA side of a switch the script already makes between XLA and CUDA, no conversion
  finding: that side runs only when the user asks for CUDA, and converting it would erase the
  script's CUDA mode (``torch_xla.device() if use_xla else torch_xla.device()``). A safe fix
  elsewhere that would edit that side waits for review.
* Under a guard that is False on an XLA host (``if use_cuda:`` with ``use_cuda = device.type ==
  "cuda"``, ``if torch.cuda.is_available():``), no finding on a CUDA-only call: it never runs on
  XLA, and removing it would break the CUDA run (a synchronize the timing there needs). A seed
  a device count or a data-parallel split there still matters (what it sets stays unset
  on XLA, the run stays on one device), and so does a placement (the model never reaches XLA): those stay reported.
* In a script with such a switch, a conversion fix to code both modes run is no longer safe:
  an autocast rewritten for XLA takes AMP away from the CUDA mode, an ``xm.optimizer_step``
  puts the CUDA mode's step through the XLA runtime.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, keyword
from ...semantic.span import Span
from ...semantic.xla_branches import Regions, lines_off_xla, regions
from ..base import Finding, Severity, message_as_written, review_reason_as_written
from ..xla403_cuda_only_call import COUNTS, SEEDS
from .guarded_sync import guarded_sync, is_guarded_sync
from .nested_xla_imports import review_module_imports
from .switched_off_filter import leave_switched_off

CONVERSION_PREFIXES = ("XLA1", "XLA2", "XLA3", "XLA403", "XLA405")
# On the CUDA side of the script's own switch neither a conversion finding nor a lazy-mode
# pitfall (a host read, a dynamic shape) applies: that code never runs on XLA.
OFF_XLA_PREFIXES = (*CONVERSION_PREFIXES, "XLA4")
# Fixes that write XLA code into code both modes run: the conversion rules', and XLA401's step
# closure (``xm.add_step_closure`` around a read the CUDA mode also makes).
SHARED_CODE_PREFIXES = (*CONVERSION_PREFIXES, "XLA401")
# What never runs on XLA under a False guard and only matters there: CUDA-only calls, prints.
CUDA_ONLY_CODES = frozenset({"XLA403", "XLA405", "XLA113"})
LAUNCHER = "XLA204"
# What makes a script multi-process: when all of it is on the CUDA side, the XLA side is a
# single-device run and needs no launcher.
DISTRIBUTED_CALLS = frozenset(
    {
        "torch.distributed.init_process_group",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.multiprocessing.spawn",
    }
)
# Skipped on XLA, these still matter: a seed or count leaves its value unset, a data-parallel
# split over CUDA devices leaves the XLA run on one device, a skipped CUDA default tensor type
# leaves every bare constructor on the CPU.
KEPT_UNDER_GUARD = (
    SEEDS
    | COUNTS
    | {
        "torch.nn.parallel.data_parallel",
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        # Skipped, the default stays the CPU: every bare constructor (ssd.pytorch's loss
        # targets, its prior boxes) then makes a CPU tensor beside the XLA ones (held-out 24).
        "torch.set_default_tensor_type",
    }
)
SHARED_AUTOCAST = "XLA102"
# CUDA mixed precision in code both modes run: a user's option may turn it on in XLA mode.
SHARED_AMP = frozenset({SHARED_AUTOCAST, "XLA103"})
HELPER_CODE = "XLA403"
XLA_CODE = re.compile(r"xla|\bx[mr]p?\.|\bpl\.")


def _call_at(model: ScriptModel, span: Span) -> str | None:
    """The call the finding is at (its span is the call or the called name)."""
    for call in model.calls:
        if model.span(call) == span or model.span(call.func) == span:
            return model.call_name(call)
    return None


def _op_spans(finding: Finding) -> list[Span]:
    if finding.fix is None:
        return []
    return [s for op in finding.fix.ops if isinstance(s := getattr(op, "span", None), Span)]


def _distributed_only_off_xla(model: ScriptModel, found: Regions) -> bool:
    calls = [c for c in model.calls if model.call_name(c) in DISTRIBUTED_CALLS]
    return bool(calls) and all(found.not_xla_at(model.span(c)) is not None for c in calls)


def _writes_xla(finding: Finding) -> bool:
    """Whether the fix writes XLA code (a removal such as ``pin_memory`` means the same in
    both modes; ``xm.optimizer_step`` does not)."""
    assert finding.fix is not None
    return any(XLA_CODE.search(str(getattr(op, "code", ""))) for op in finding.fix.ops)


def _helper_handles_xla(model: ScriptModel, f: Finding) -> bool:
    """XLA403's finding at a workspace helper call whose CUDA setup all sits after the
    helper's own XLA branch returned (``if is_xla(): ...; return``)."""
    for call in model.calls:
        if model.span(call) != f.span or not isinstance(call.func, ast.Name):
            continue
        facts = model.steps.external(call)
        if facts is None:
            return False
        lines = [line for _, line in facts.cuda_calls] + [facts.nccl_line] * bool(facts.nccl_line)
        return lines_off_xla(facts.module, lines)
    return False


def _dead_on_xla(model: ScriptModel, found: Regions, f: Finding) -> bool:
    if f.code == HELPER_CODE and f.fix is None and _helper_handles_xla(model, f):
        return True
    if f.code.startswith(OFF_XLA_PREFIXES) and found.not_xla_at(f.span) is not None:
        return True
    if f.code == LAUNCHER and found.switch_line is not None:
        return _distributed_only_off_xla(model, found)
    if f.code in CUDA_ONLY_CODES and found.cuda_only_at(f.span) is not None:
        return _call_at(model, f.span) not in KEPT_UNDER_GUARD
    return False


def leave_non_xla_code(model: ScriptModel, findings: list[Finding]) -> list[Finding]:
    # A script that imports torch_xla only where it is usable gets its sync the same way,
    # which serves both of its modes.
    findings = leave_switched_off(model, findings)
    findings = review_module_imports(model, [guarded_sync(model, f) or f for f in findings])
    both_modes = {id(f) for f in findings if is_guarded_sync(f)}
    found = regions(model)
    if not (found.not_xla or found.cuda_only or any(f.code == HELPER_CODE for f in findings)):
        return findings
    out = []
    for f in findings:
        if _dead_on_xla(model, found, f):
            continue
        if f.fix is not None and f.fix.safe and found.switch_line is not None:
            touched = next(
                (r for s in _op_spans(f) if (r := found.not_xla_at(s)) is not None), None
            )
            if touched is not None:
                reason = (
                    f"it edits the CUDA side of the script's own XLA/CUDA switch (line "
                    f"{touched.line}), which runs only when the script is not on XLA"
                )
                f = replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
            elif id(f) not in both_modes and (
                f.code == SHARED_AUTOCAST
                or (f.code.startswith(SHARED_CODE_PREFIXES) and _writes_xla(f))
            ):
                reason = (
                    f"the script already switches between XLA and CUDA (line "
                    f"{found.switch_line}) and this code serves both modes: rewritten for XLA, "
                    "its CUDA mode changes"
                )
                if f.code == SHARED_AUTOCAST:
                    reason += (
                        " (the CUDA autocast would be lost; keep it, or use the device's type, "
                        "torch.autocast(device.type, ...), after checking the XLA mode's dtype)"
                    )
                f = replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
        elif (
            f.fix is not None
            and found.switch_line is not None
            and id(f) not in both_modes
            and f.code in SHARED_AMP
            and _writes_xla(f)
            and not any(found.not_xla_at(s) is not None for s in _op_spans(f))
        ):
            # Already for review for its own reason: the reviewer must also know that the
            # rewrite changes the script's CUDA mode (held-out 65's SimCLR scaler).
            reason = (
                f"{review_reason_as_written(f.fix)}; also, the script switches between XLA and "
                f"CUDA (line {line_ref(found.switch_line)}) and this code serves both modes: "
                "rewritten for XLA, its CUDA mode changes"
            )
            f = replace(f, fix=replace(f.fix, review_reason=reason))
        if f.code in SHARED_AMP and found.switch_line is not None:
            f = _amp_by_option(model, found, f)
        out.append(f)
    return out


def _amp_switch(model: ScriptModel, f: Finding) -> ast.expr | None:
    """What turns the CUDA autocast or scaler at ``f`` on: its ``enabled=`` expression, or
    the test of the ``if`` it is built under in its function (``if cfg.use_pytorch_amp:``)."""
    call = next(
        (c for c in model.calls if model.span(c) == f.span or model.span(c.func) == f.span), None
    )
    if call is None:
        return None
    enabled = keyword(call, "enabled")
    if enabled is not None:
        constant = isinstance(enabled.value, ast.Constant)
        return None if constant else enabled.value
    for node in model.ancestors(call):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return None
        if isinstance(node, ast.If):
            return node.test
    return None


def _amp_by_option(model: ScriptModel, found: Regions, f: Finding) -> Finding:
    """In a script with its own XLA/CUDA switch, CUDA AMP that an option turns on is the CUDA
    mode's (held-out 34: moco_v3_tpu's ``use_pytorch_amp``, off by default): what it does in
    XLA mode is worth knowing, not a conversion step."""
    switch = _amp_switch(model, f)
    if switch is None:
        return f
    note = (
        f" (in the XLA mode of the script's own switch, line {line_ref(found.switch_line)}, "
        f"only when `{model.segment(switch)[:60]}` turns it on; its CUDA mode keeps it)"
    )
    return replace(f, severity=Severity.INFORMATION, message=message_as_written(f) + note)


__all__ = ["leave_non_xla_code"]
