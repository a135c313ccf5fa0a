"""XLA403: ``torch.cuda.set_device(i)`` decides where every CUDA placement without an index
goes (``torch.device("cuda")``, ``.cuda()``, ``"cuda"``). Removing it is part of the conversion,
but only safe when Convert also moves those placements to XLA: if one stays on CUDA (its XLA101
change waits for review), each process's tensors land on ``cuda:0`` while, say,
``DDP(device_ids=[local_rank])`` still names its own GPU (FastPitch, held-out 39). An explicit
index (``device = rank % torch.cuda.device_count()``) does not depend on it: that pair is
applied by ``fix`` in rounds (XLA101 waits for this removal)."""

from __future__ import annotations

import ast
import re

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ..base import Target

# "cuda" with no ":N" after it, or a bare ``.cuda()``.
INDEX_LESS = re.compile(r"""["']cuda["']|\.cuda\(\s*\)""")


def current_device_kept(model: ScriptModel, target: Target, call: ast.Call) -> str:
    """Why removing the set_device ``call`` changes where tensors go ("" when it does not)."""
    for line, reason in _index_less_kept(model, target):
        if not _exclusive(model, call, line):
            return reason
    return ""


def _exclusive(model: ScriptModel, call: ast.Call, line: int) -> bool:
    """Whether 0-based ``line`` sits in the other branch of an ``if`` the call sits in
    (nanoGPT: set_device under ``if ddp:``, the index-less picker under ``else:``)."""
    child: ast.AST = call
    for node in model.ancestors(call):
        if isinstance(node, ast.If) and node.orelse:
            mine, other = (
                (node.body, node.orelse)
                if any(child is s for s in node.body)
                else (node.orelse, node.body)
            )
            first, last = other[0].lineno - 1, (other[-1].end_lineno or other[-1].lineno) - 1
            if first <= line <= last:
                return True
        child = node
    return False


def _index_less_kept(model: ScriptModel, target: Target) -> list[tuple[int, str]]:
    def compute() -> list[tuple[int, str]]:
        # Imported here: XLA101's final findings pass through filters that import XLA403.
        from ..xla101_cuda_device import check as device_check  # noqa: PLC0415
        from .final_fixes import final_findings  # noqa: PLC0415

        found: list[tuple[int, str]] = []
        for f in final_findings(model, "XLA101", device_check, target):
            if f.fix is not None and f.fix.safe:
                continue
            # The finding's lines, read through the model (recorded as read, split once).
            lines = [model.line_text(n) for n in range(f.span.start.line, f.span.end.line + 1)]
            if INDEX_LESS.search("\n".join(lines)):
                found.append(
                    (
                        f.span.start.line,
                        f"line {line_ref(f.span.start.line + 1)} places on CUDA without an "
                        "index, which this call decides, and its change to XLA waits for "
                        "review: removed alone, every process would use cuda:0",
                    )
                )
        found.extend(_helpers_placing_index_less(model, target))
        # ``FSDP(..., device_id=torch.cuda.current_device())`` (fine-tune-mistral, held-out
        # 125): no fix touches that read, and without set_device every rank answers 0.
        for call in model.calls_to("torch.cuda.current_device"):
            found.append(
                (
                    call.lineno - 1,
                    f"line {line_ref(call.lineno)} reads torch.cuda.current_device(), which "
                    "this call decides: removed alone, every process would get device 0",
                )
            )
        return found

    return model.memo(("current device kept", target), compute)


def cuda_placements_kept(model: ScriptModel, target: Target) -> list[int]:
    """1-based lines of XLA101's device changes that Convert does not apply (their fix waits
    for review, or there is none): what they place stays on CUDA."""

    def compute() -> list[int]:
        # XLA101's own findings, not the engine's final ones: those run the launcher rule,
        # which asks XLA205 again (without the per-parse memo, ddp_cuda.py took minutes).
        from ..base import RuleContext  # noqa: PLC0415
        from ..xla101_cuda_device import check as device_check  # noqa: PLC0415

        return [
            f.span.start.line + 1
            for f in device_check(model, RuleContext(target=target))
            if (f.fix is None or not f.fix.safe)
            and not model.silenced("XLA101", f.span.start.line, f.span.end.line)
        ]

    return model.memo(("cuda placements kept", target), compute)


def _helpers_placing_index_less(model: ScriptModel, target: Target) -> list[tuple[int, str]]:
    """Calls of workspace helpers that place on CUDA without an index (Tacotron2's
    ``mode(model, True)``, whose utils/util.py calls a bare ``.cuda()``, held-out 97): the
    helper's file is not this conversion's, so what it places stays on the device this call
    decides. Read from the helper's own XLA101 evidence (read from disk, never run)."""
    from ...semantic.workspace_calls import helper_target, parsed_module  # noqa: PLC0415
    from .helper_evidence import helper_evidence  # noqa: PLC0415

    if not model.path or model.path.startswith("<"):
        return []
    found: list[tuple[int, str]] = []
    for call in model.calls:
        helper = helper_target(model, call)
        if helper is None:
            continue
        evidence = [e for e in helper_evidence(helper, target) if e.code == "XLA101"]
        if not evidence:
            continue
        parsed = parsed_module(helper.path)
        if parsed is None:
            continue
        lines = parsed.source.splitlines()
        if any(0 < e.line <= len(lines) and INDEX_LESS.search(lines[e.line - 1]) for e in evidence):
            found.append(
                (
                    call.lineno - 1,
                    f"line {line_ref(call.lineno)} calls {helper.function}() of another file "
                    "that places on CUDA without an index, which this call decides; that file "
                    "is not converted with this one: removed alone, every process would use "
                    "cuda:0",
                )
            )
    return found
