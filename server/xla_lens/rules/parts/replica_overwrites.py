"""XLA202: a rank env read in the parent of a script torch_xla's launcher already starts,
whose value every replica overwrites before reading it.

NVIDIA's SSD ported to TPU (held-out 106's control) reads ``LOCAL_RANK`` in its main block
(``args.local_rank = int(os.environ.get('LOCAL_RANK', args.local_rank))``, and as the
``--local_rank`` default) and hands ``args`` to ``xmp.spawn(train, args=(..., args))``;
``train`` begins with ``args.local_rank = xm.get_ordinal()``. Under the XLA launcher the
variable is unset in the parent, so the parent reads its default (0: the one parent acts as
rank 0 for its own set-up), and no replica ever sees that value. Nothing to convert there.
"""

from __future__ import annotations

import ast

from ...semantic.launch import (
    XLA_LAUNCHERS,
    launch_targets,
    launched_function,
    replica_functions,
)
from ...semantic.model import ScriptModel, const_str, method_name


def overwritten_in_replicas(model: ScriptModel, read: ast.AST) -> bool:
    attribute = _destination(model, read)
    if attribute is None:
        return False
    fn = model.enclosing_function(read)
    if fn is not None and fn in replica_functions(model, launch_targets(model, None)):
        return False  # a replica reads it (``make_parser()`` runs in the parent only)
    launches = [c for c in model.calls if model.call_name(c) in XLA_LAUNCHERS]
    if not launches:
        return False
    for call in launches:
        name = launched_function(model, call)
        fn = model.functions.get(name or "")
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or not _overwrites_first(
            fn, attribute
        ):
            return False
    return True


def _destination(model: ScriptModel, read: ast.AST) -> str | None:
    """The attribute the read's value lands in: ``args.local_rank = int(os.environ.get(...))``,
    or the default of ``parser.add_argument('--local_rank', default=os.getenv(...))``."""
    node: ast.AST = read
    parent = model.parent(node)
    while isinstance(parent, ast.Call) and not isinstance(parent.func, ast.Attribute):
        node, parent = parent, model.parent(parent)  # ``int(...)`` around it
    if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1:
        target = parent.targets[0]
        return target.attr if isinstance(target, ast.Attribute) else None
    if isinstance(parent, ast.keyword) and parent.arg == "default":
        call = model.parent(parent)
        if isinstance(call, ast.Call) and method_name(call) == "add_argument":
            dest = next((const_str(k.value) for k in call.keywords if k.arg == "dest"), None)
            if dest:
                return dest
            flags = [const_str(a) or "" for a in call.args]
            long = next((f for f in flags if f.startswith("--")), None)
            return long[2:].replace("-", "_") if long else None
    return None


def _overwrites_first(fn: ast.FunctionDef | ast.AsyncFunctionDef, attribute: str) -> bool:
    """A statement of ``fn``'s own body stores ``<param>.attribute`` before anything in the
    function reads an attribute of that name."""
    params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    for stmt in fn.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(target := stmt.targets[0], ast.Attribute)
            and target.attr == attribute
            and isinstance(target.value, ast.Name)
            and target.value.id in params
            and not _reads(stmt.value, attribute)
        ):
            return True
        if _reads(stmt, attribute):
            return False
    return False


def _reads(node: ast.AST, attribute: str) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr == attribute and isinstance(n.ctx, ast.Load)
        for n in ast.walk(node)
    )


__all__ = ["overwritten_in_replicas"]
