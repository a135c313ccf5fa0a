"""A helper module's runtime call that another module's launcher parent runs.

``utils.seed_everything`` holds ``torch.cuda.manual_seed(seed)``; XLA403 writes
``torch_xla.manual_seed(seed)`` there, right for a replica. But ``train_tpu.py`` calls
``seed_everything(42)`` at module level, before ``xmp.spawn``: after the fix the parent
initialises the XLA runtime and the launch fails ("Runtime is already initialized", measured,
held-out 93). ``launch_safety`` sees the parent only in the file it converts; here the file has
no launcher of its own, so its callers in the workspace (``workspace_callers``, read from disk)
say which of its functions the parent of theirs runs. Such a fix waits for review, naming the
caller's line. Checked only for findings inside a top-level function that another module
imports, so fixes stay lazily built elsewhere.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ...semantic.launch import emits_runtime_call, enclosing_functions_at
from ...semantic.model import ScriptModel
from ...semantic.workspace_callers import imported_elsewhere, workspace_callers
from ..base import Finding, Fix

REVIEW = (
    "{caller} line {line} calls {function}() in its launcher's parent process, before the "
    "replicas start: with this runtime call there, torch_xla refuses to launch ('Runtime is "
    "already initialized'); call it only in the function each replica runs"
)


def _writes_runtime_call(fix: Fix) -> bool:
    return any(
        isinstance(getattr(op, "code", None), str) and emits_runtime_call(op.code)  # type: ignore[attr-defined]
        for op in fix.ops
    )


def review_helper_runtime_fixes(model: ScriptModel, findings: list[Finding]) -> list[Finding]:
    if not any(f.fix is not None and f.fix.safe for f in findings):
        return findings
    if not imported_elsewhere(model):
        return findings
    functions = model.steps.module_functions
    out = []
    for f in findings:
        if f.fix is not None and f.fix.safe:
            enclosing = enclosing_functions_at(model, f.span.start.line + 1)
            outer = enclosing[0] if enclosing else None
            if outer is not None and functions.get(outer.name) is outer:
                reason = _parent_caller(model, outer.name)
                if reason and _writes_runtime_call(f.fix):
                    f = replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
        out.append(f)
    return out


def _parent_caller(model: ScriptModel, function: str) -> str | None:
    for caller in workspace_callers(model, function):
        if caller.parent_lines:
            return REVIEW.format(
                caller=Path(caller.path).name, line=caller.parent_lines[0], function=function
            )
    return None
