"""XLA108: ``torch.save`` of a state dict (a checkpoint), where XLA wants ``xm.save``.

A state dict of an XLA model holds XLA tensors: ``xm.save`` moves them to the CPU and
writes on the master ordinal only, so replicas do not all write the same file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ..semantic.model import SCOPE_TYPES, Emitter, ScriptModel, arg_or_keyword, method_name
from ..semantic.params import argument_values, parameter_of
from .base import (
    Category,
    EditOp,
    Finding,
    Fix,
    Replace,
    Rule,
    RuleContext,
    SetArgs,
    SetKeyword,
    Severity,
)

CODE = "XLA108"
# torch.save(obj, f, ...) keywords and their positions in xm.save(data, file_or_path).
POSITIONS = {"obj": 0, "f": 1}
RANKISH = re.compile(r"rank|ordinal|master|main_process|is_main", re.IGNORECASE)


def _is_state_dict(model: ScriptModel, node: ast.AST | None, depth: int = 0) -> bool:
    """A ``.state_dict()`` call, a dict literal holding one, or a name assigned one."""
    if node is None or depth > 3:
        return False
    if isinstance(node, ast.Call):
        return method_name(node) == "state_dict"
    if isinstance(node, ast.Dict):
        return any(_is_state_dict(model, v, depth + 1) for v in node.values)
    if isinstance(node, ast.Name):
        param = parameter_of(model, node)
        if param is not None:
            # save_checkpoint(state, filename): what every caller passes as ``state``.
            values = argument_values(model, *param)
            return bool(values) and all(_is_state_dict(model, v, depth + 1) for v in values)
        return any(_is_state_dict(model, v, depth + 1) for v in model.assigned_from(node.id))
    return False


def _fix(model: ScriptModel, call: ast.Call) -> Fix | None:
    """Swap the function; ``obj=``/``f=`` become positions (xm.save names them differently).
    None for the other torch.save options, which xm.save does not take."""
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > 2:
        return None
    e = Emitter(model)
    ops: list[EditOp] = [Replace(model.span(call.func), f"{e.xm}.save")]
    if call.keywords:
        if any(kw.arg not in POSITIONS for kw in call.keywords):
            return None
        args = [model.segment(a) for a in call.args]
        by_name = sorted(call.keywords, key=lambda kw: POSITIONS[kw.arg])  # type: ignore[index]
        args += [model.segment(kw.value) for kw in by_name]
        ops.append(SetArgs(model.span(call), ", ".join(args)))
    title = f"Replace with {e.xm}.save"
    path = arg_or_keyword(call, 1, "f")
    if _mentions_rank(model, path):
        # One file per replica: xm.save writes on the master only unless told otherwise.
        if call.keywords:
            ops[-1] = SetArgs(model.span(call), ops[-1].code + ", master_only=False")  # type: ignore[union-attr]
        else:
            ops.append(SetKeyword(model.span(call), "master_only", "False"))
        title = f"Replace with {e.xm}.save(..., master_only=False) (one file per replica)"
    return Fix(title, (*ops, *e.imports))


def _mentions_rank(model: ScriptModel, node: ast.AST | None) -> bool:
    if node is None:
        return False
    for n in ast.walk(node):
        ident = (
            n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        )
        if ident is not None and RANKISH.search(ident):
            return True
    return False


def _rank_guard(model: ScriptModel, call: ast.Call, depth: int = 0) -> ast.If | None:
    """The ``if rank == 0:`` (``if master_process:``...) the save runs under, if any: around
    it, or around a call of the helper function it is in (``save_checkpoint(...)``)."""
    for a in model.ancestors(call):
        if isinstance(a, ast.If) and _mentions_rank(model, a.test):
            return a
        if isinstance(a, SCOPE_TYPES):
            if depth > 2 or not isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef):
                return None
            for site in model.calls:
                if model.steps.callee(site) is a:
                    guard = _rank_guard(model, site, depth + 1)
                    if guard is not None:
                        return guard
            return None
    return None


def _review(model: ScriptModel, call: ast.Call, ctx: RuleContext) -> str:
    """Why swapping in xm.save could change what the script does here ("" when it can't)."""
    if ctx.target == "legacy" and model.is_distributed:
        guard = _rank_guard(model, call)
        if guard is not None:
            return (
                f"torch_xla 1.x's xm.save waits for every replica at a rendezvous, but this "
                f"save runs only under the rank check on line {guard.lineno}: the other "
                "replicas never arrive and the run hangs; call xm.save on every replica "
                "instead (it writes on the master only)"
            )
    return ""


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.calls_to("torch.save"):
        if not _is_state_dict(model, arg_or_keyword(call, 0, "obj")):
            continue
        fix = _fix(model, call)
        if fix is not None:
            reason = _review(model, call, ctx)
            if reason:
                fix = Fix(fix.title, fix.ops, safe=False, review_reason=reason)
        message = (
            "checkpoint with torch.save: xm.save moves the XLA tensors to the CPU and writes "
            "on the master ordinal only"
        )
        yield Finding(
            CODE,
            message,
            model.span(call),
            Severity.WARNING,
            fix=fix,
            manual=None
            if fix is not None
            else "xm.save(data, path) takes no pickle options: drop them and call xm.save",
        )


HOVER = """\
**XLA108 · torch.save checkpoint → xm.save**

A state dict of a model on XLA holds XLA tensors. `xm.save(data, path)` moves them to the
CPU first and writes on the master ordinal only (`master_only=True`), so in a multi-replica
run one process writes the file.

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `xm.save(model.state_dict(), path)` (`import torch_xla.core.xla_model as xm`) |
| legacy (1.13, SageMaker Training Compiler) | `xm.save(model.state_dict(), path)` |

Fix: `torch.save` → `xm.save`, arguments kept. torch.save's pickle options have no
`xm.save` equivalent.
"""

RULE = Rule(
    code=CODE,
    name="xm-save",
    category=Category.CONVERSION,
    summary="torch.save(model.state_dict(), path) → xm.save(...) (CPU copy, master ordinal only)",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={"torch.save": HOVER, "torch_xla.core.xla_model.save": HOVER},
)
