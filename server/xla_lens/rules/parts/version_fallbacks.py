"""XLA501: calls of the old torch_xla API in the branch a script takes only on a torch_xla that
lacks the new one (``torch_xla.device() if hasattr(torch_xla, "device") else
xm.xla_device()``; held-out 75's TPU control). On torch_xla 2.9 that branch never runs, and
on the old torch_xla it runs on, the rewrite would raise: no finding there."""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel


def _asks_torch_xla_for(model: ScriptModel, test: ast.expr) -> bool | None:
    """True for ``hasattr(torch_xla, "launch")`` (a torch_xla module asked for a name), False
    for its ``not``, None for any other test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _asks_torch_xla_for(model, test.operand)
        return None if inner is None else not inner
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "hasattr"
        and len(test.args) == 2
    ):
        target = test.args[0]
        q = model.qualname(target) if isinstance(target, ast.Name | ast.Attribute) else None
        if (q or "").startswith("torch_xla"):
            return True
    return None


def version_fallback(model: ScriptModel, call: ast.Call) -> bool:
    """``torch_xla.device() if hasattr(torch_xla, "device") else xm.xla_device()`` and
    ``if hasattr(torch_xla, "launch"): ... else: xmp.spawn(...)`` (held-out 75's control): the
    old form runs only on a torch_xla without the new one, where the rewrite would raise."""
    child: ast.AST = call
    for parent in model.ancestors(call):
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return False
        if isinstance(parent, ast.If | ast.IfExp):
            asks = _asks_torch_xla_for(model, parent.test)
            if asks is not None:
                in_else = (
                    child is parent.orelse
                    if isinstance(parent, ast.IfExp)
                    else any(child is s for s in parent.orelse)
                )
                in_body = (
                    child is parent.body
                    if isinstance(parent, ast.IfExp)
                    else any(child is s for s in parent.body)
                )
                if (asks and in_else) or (not asks and in_body):
                    return True
        child = parent
    return False
