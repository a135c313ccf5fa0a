"""XLA205 for DistributedDataParallel itself: ``device_ids``/``output_device``, and the
``gradient_as_bucket_view`` note.

DDP is a supported PyTorch/XLA mode: over the ``xla`` backend it all-reduces the gradients
exactly as on CUDA, so the conversion keeps it. Only ``device_ids``/``output_device`` go: they
name CUDA indices, and each XLA process owns one device (``device_ids=[rank]`` would point rank
1 at a device it cannot see). ``device_ids`` also made DDP move each forward's inputs onto the
device, so dropping it waits for review when a forward call may pass a CPU tensor. The process
group's backend is ``xla205_ddp_backend.py``'s part of the rule.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, keyword
from ..base import EditOp, Finding, Fix, RemoveKeyword, SetArgs, SetKeyword, Severity
from .ddp_cpu_input import cpu_input_findings
from .ddp_inputs import CpuInput, unmoved_input
from .ddp_kwargs import kwargs_review_reason

XLA_ORDINALS = ("local_ordinal", "global_ordinal", "get_ordinal", "xla_device", "xla_index")


def ddp_findings(model: ScriptModel, call: ast.Call, code: str) -> Iterator[Finding]:
    """The findings of one ``DistributedDataParallel(...)`` call, in the rule's order."""
    finding = _ddp_finding(model, call, code)
    if finding is not None:
        yield from _forward_findings(model, call, finding, code)
    elif not _single_device(call):
        yield from cpu_input_findings(model, call, code)
    finding = finding or _ddp_note(model, call, code)
    if finding is not None:
        yield finding


def _names_cuda_device(node: ast.expr | None) -> bool:
    """``device_ids=[rank]``, ``[args.gpu]``, ``[0]``, ``output_device=local_rank``."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return False
    if isinstance(node, ast.List | ast.Tuple):
        return bool(node.elts)
    return True


def _ddp_finding(model: ScriptModel, call: ast.Call, code: str) -> Finding | None:
    # ``**kw`` cannot un-name an explicit device_ids (a second one is a TypeError); a
    # ``*args`` may shift what the positional ones mean.
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    # DistributedDataParallel(module, device_ids=None, output_device=None, dim=0, ...)
    positional = call.args[1:3]
    named = [k for k in ("device_ids", "output_device") if _names_cuda_device(_kw_value(call, k))]
    if not named and not any(_names_cuda_device(a) for a in positional):
        return None
    span = model.span(call)
    if len(call.args) > 1:
        if len(call.args) > 3:
            return None  # dim= and later given positionally: a hand edit
        kept = [model.segment(call.args[0])]
        kept += [
            model.segment(k) for k in call.keywords if k.arg not in {"device_ids", "output_device"}
        ]
        ops: tuple[EditOp, ...] = (SetArgs(span, ", ".join(kept)),)
    else:
        ops = tuple(
            RemoveKeyword(span, k) for k in ("device_ids", "output_device") if keyword(call, k)
        )
    shown = ", ".join(
        model.segment(k) for k in call.keywords if k.arg in {"device_ids", "output_device"}
    ) or ", ".join(model.segment(a) for a in positional)
    # ``device_ids=[xr.local_ordinal()]`` in a script written for XLA (held-out 125's control)
    # is no CUDA device, yet DDP refuses it all the same.
    xla_index = any(part in shown for part in XLA_ORDINALS)
    what = "gives DDP a device index, not a CUDA device" if xla_index else "names a CUDA device"
    message = (
        f"DistributedDataParallel on XLA: `{shown}` {what}; each XLA process "
        "owns one device, its `xla:0`, so a device index past 0 makes DDP fail in every "
        'process but the first: leave device_ids/output_device out (DDP over the "xla" backend '
        "still all-reduces the gradients)"
    )
    # device_ids also made DDP move each forward's inputs onto the device: without them a
    # CPU input reaches the XLA model ("Expected XLA tensor"), so the drop waits for review
    # unless every forward call visibly passes on-device inputs.
    cpu = unmoved_input(model, call) if _single_device(call) else None
    if cpu is not None:
        message += f"; but device_ids also moved each forward's inputs onto the device (line {line_ref(cpu.line)})"
    reasons = [r for r in (cpu.reason if cpu else None, kwargs_review_reason(model, call)) if r]
    reason = "; ".join(reasons)
    return Finding(
        code,
        message,
        span,
        Severity.WARNING,
        fix=Fix(
            "Keep DDP, drop device_ids/output_device",
            ops,
            safe=not reasons,
            review_reason=reason,
        ),
        manual=f"review: {reason}" if reasons else None,
    )


def _single_device(call: ast.Call) -> bool:
    """Whether ``device_ids`` (or the 2nd positional) is given: only then does DDP move
    the inputs (``output_device`` alone moves only the outputs)."""
    ids = _kw_value(call, "device_ids") or (call.args[1] if len(call.args) > 1 else None)
    return _names_cuda_device(ids)


def _forward_findings(
    model: ScriptModel, call: ast.Call, ddp: Finding, code: str
) -> Iterator[Finding]:
    """The forward call whose CPU input DDP's device_ids used to move."""
    if ddp.fix is None or ddp.fix.safe:
        return
    cpu: CpuInput | None = unmoved_input(model, call)
    if cpu is not None and cpu.forward is not None:
        yield Finding(
            code,
            "this input is a CPU tensor: DDP with device_ids moved it onto the device, "
            "DDP on XLA does not (the model would get a CPU tensor)",
            model.span(cpu.forward),
            Severity.WARNING,
            manual="move the inputs with .to(device)",
        )


def _kw_value(call: ast.Call, name: str) -> ast.expr | None:
    kw = keyword(call, name)
    return kw.value if kw else None


def _ddp_note(model: ScriptModel, call: ast.Call, code: str) -> Finding | None:
    """DDP in a script not yet on XLA: it stays, over the "xla" backend; torch_xla's own
    examples also pass ``gradient_as_bucket_view=True`` (gradients share the all-reduce
    buckets: no copy, less memory)."""
    if model.uses_torch_xla or keyword(call, "gradient_as_bucket_view") is not None:
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        kw.arg is None for kw in call.keywords
    ):
        return None
    return Finding(
        code,
        'DistributedDataParallel works on XLA over the "xla" process-group backend and '
        "stays; torch_xla passes gradient_as_bucket_view=True (gradients live in the "
        "all-reduce buckets: no copy)",
        model.span(call.func),
        Severity.INFORMATION,
        fix=Fix(
            "Keep DDP, with gradient_as_bucket_view=True",
            (SetKeyword(model.span(call), "gradient_as_bucket_view", "True"),),
            safe=False,
            review_reason="gradients become views of the all-reduce buckets: code that calls "
            "detach_() on them or replaces them fails",
        ),
    )
