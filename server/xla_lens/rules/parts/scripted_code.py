"""No fix writes torch_xla code into TorchScript.

A function or class decorated ``@torch.jit.script`` is compiled from its source when Python
defines it: ``.to(torch_xla.device())`` there makes the import of the module fail on every
host, CUDA ones included (held-out 62: ImageNet21K's ``DownsampleJIT`` in anti_aliasing.py,
OSError "Can't get source" / an unscriptable call, measured). The engine runs this over every
finding: a fix that writes XLA code inside scripted code is dropped, and the finding says what
to do instead.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ..base import Finding
from .xla_branch_filter import XLA_CODE

SCRIPTING = frozenset({"torch.jit.script", "torch.jit.script_method", "torch.jit.interface"})


def _scripted(model: ScriptModel) -> list[tuple[int, int, int]]:
    """(first line, last line, decorator line) of every scripted def or class, 1-based."""

    def build() -> list[tuple[int, int, int]]:
        out = []
        for node in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            for dec in node.decorator_list:  # type: ignore[attr-defined]
                target = dec.func if isinstance(dec, ast.Call) else dec
                if model.qualname(target) in SCRIPTING:
                    end = node.end_lineno or node.lineno  # type: ignore[attr-defined]
                    out.append((node.lineno, end, dec.lineno))  # type: ignore[attr-defined]
                    break
        return out

    return model.memo(("scripted_code",), build) if "jit" in model.source else []


def leave_scripted_code(model: ScriptModel, findings: list[Finding]) -> list[Finding]:
    regions = _scripted(model)
    if not regions:
        return findings
    out = []
    for f in findings:
        if f.fix is not None:
            lines = [op.span.start.line + 1 for op in f.fix.ops if hasattr(op, "span")]
            writes = any(XLA_CODE.search(str(getattr(op, "code", ""))) for op in f.fix.ops)
            inside = next(
                (dec for lo, hi, dec in regions if any(lo <= ln <= hi for ln in lines)), None
            )
            if writes and inside is not None:
                manual = (
                    f"this code is TorchScript (`@torch.jit.script`, line {line_ref(inside)}), "
                    "compiled from its source when Python defines it, and torch_xla calls "
                    f"cannot be scripted ({f.fix.title} would make the module fail to import "
                    "on every host): place the tensor from the calling module instead (or drop "
                    "the decorator)"
                )
                f = replace(f, fix=None, manual=manual)
        out.append(f)
    return out
