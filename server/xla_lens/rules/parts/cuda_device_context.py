"""XLA405's ``torch.cuda.device(i)``: the context manager that makes CUDA device ``i`` current.

On an XLA host (torch 2.9) entering it initialises CUDA and raises ("Found no NVIDIA driver"),
for a ``torch.device("cpu")`` ValueError, for None RuntimeError; only a negative index (-1, the
"no GPU" value scripts set beside a CPU device) does nothing. The XLA device needs no current
device, so the conversion drops the ``with`` and keeps its body. That keeps the meaning only when
nothing in the body reads the current CUDA device (``torch.cuda.memory_allocated()``, ``.cuda()``,
``"cuda"`` without an index, a function of this script that does): then the fix is for review
and says which line.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator

from ...semantic.edits import ReplaceStatement
from ...semantic.model import ScriptModel
from ...semantic.placement_guards import needs_cuda
from ..base import Finding, Fix, Severity

CALL = "torch.cuda.device"
MANUAL = (
    "Remove the torch.cuda.device(...) context and run its code on the XLA device "
    "(torch_xla.device()); each XLA process already has its own device."
)


def device_context_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in model.calls_to(CALL):
        index = call.args[0] if call.args else None
        noop = _negative(index)
        what = (
            f"{model.segment(call)} selects no CUDA device (a negative index) and does nothing"
            if noop
            else f"{model.segment(call)} makes a CUDA device current: on an XLA host it "
            'initialises CUDA and raises ("Found no NVIDIA driver"; it does nothing only for a '
            "negative index such as -1)"
        )
        message = f"{what}; the XLA device needs no current device: drop the context"
        node = model.parent(call)
        item = model.parent(node) if isinstance(node, ast.withitem) else None
        if not (isinstance(item, ast.With) and node.optional_vars is None):
            yield Finding(code, message, model.span(call), Severity.WARNING, manual=MANUAL)
            continue
        blocker = None if noop else _reads_current_device(model, item.body)
        reason = (
            f"the block's `{blocker}` reads the CUDA device this context makes current; on XLA "
            "decide which device it means"
            if blocker
            else ""
        )
        fix = Fix(
            f"Drop the `with {model.segment(call)}:` and keep its body",
            (ReplaceStatement(model.span(item), _without(model, item, node)),),
            safe=not blocker,
            review_reason=reason,
        )
        if blocker:
            message += f" (fix needs review: {reason})"
        yield Finding(code, message, model.span(call), Severity.WARNING, fix=fix)


def _negative(index: ast.AST | None) -> bool:
    return (
        isinstance(index, ast.UnaryOp)
        and isinstance(index.op, ast.USub)
        and isinstance(index.operand, ast.Constant)
        and isinstance(index.operand.value, int)
    )


def _reads_current_device(model: ScriptModel, body: list[ast.stmt]) -> str | None:
    """The first code in ``body`` that depends on the current CUDA device: a CUDA call, or a
    call of a function or method of this script that makes one (one level: a helper's helpers
    are its own business)."""
    for stmt in body:
        hit = next((n for n in ast.walk(stmt) if _cuda_node(model, n)), None)
        if hit is not None:
            # The innermost CUDA code (``torch.cuda.memory_allocated()``, not the print of it).
            while (
                deeper := next((n for n in _below(hit) if _cuda_node(model, n)), None)
            ) is not None:
                hit = deeper
            return model.segment(hit)[:60]
    called = {
        c.func.id if isinstance(c.func, ast.Name) else c.func.attr
        for stmt in body
        for c in ast.walk(stmt)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name | ast.Attribute)
    }
    for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        if fn.name in called and any(needs_cuda(model, s) for s in fn.body):
            return f"{fn.name}() (line {fn.lineno}), which calls CUDA"
    return None


def _cuda_node(model: ScriptModel, n: ast.AST) -> bool:
    return isinstance(n, ast.Call | ast.Constant) and needs_cuda(model, n)


def _below(node: ast.AST) -> Iterator[ast.AST]:
    it = ast.walk(node)
    next(it)
    return it


def _item_code(model: ScriptModel, item: ast.withitem) -> str:
    code = model.segment(item.context_expr)
    if item.optional_vars is not None:
        code += f" as {model.segment(item.optional_vars)}"
    return code


def _without(model: ScriptModel, with_node: ast.With, item: ast.withitem) -> str:
    """The ``with`` statement's code without ``item``: its body alone (dedented) when it
    was the only item. Comments between the body's statements are in the text taken; the
    engine's statement replacement keeps the others (the ``with`` line's, those above the
    first statement and after the last one: engine/apply_comments.py)."""
    first = with_node.body[0]
    if first.lineno == with_node.lineno:  # ``with ...: stmt`` on one line
        body = "\n".join(model.segment(s) for s in with_node.body)
    else:
        end = with_node.body[-1].end_lineno or first.lineno
        # By the body's own indentation; a line indented less (a comment at column 0, the
        # inside of a string) is left as it is.
        cut = first.col_offset
        lines = [line.rstrip("\r\n") for line in model.text_lines(first.lineno - 1, end - 1)]
        body = "\n".join(line[cut:] if line[:cut].isspace() else line for line in lines)
    others = [_item_code(model, i) for i in with_node.items if i is not item]
    if not others:
        return body
    return f"with {', '.join(others)}:\n" + textwrap.indent(body, "    ")
