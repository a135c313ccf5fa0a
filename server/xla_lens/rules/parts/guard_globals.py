"""XLA204: the training function reads a global that only the ``if __name__ == "__main__":``
block binds (RIFE's ``train()`` reads ``args.batch_size`` where ``args = parser.parse_args()``
runs in the block, held-out 117). The processes torch_xla.launch (or xla_spawn) starts import
the script without running that block, so ``_mp_fn`` would raise NameError in every one of them.
"""

from __future__ import annotations

import ast
import builtins

from ...semantic.calls import FunctionNode
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from .replica_coordination import FAILS_AT_ONCE

# How deep the script's own calls are followed from the entry function.
CALL_DEPTH = 3
_BUILTINS = frozenset(dir(builtins))


def guard_only_global(model: ScriptModel, guard: ast.If, entry: FunctionNode) -> str:
    """Why each replica would fail at once (a read of a global bound only in ``guard``), or
    ""."""
    guard_bound = _bound_in(guard.body)
    if not guard_bound:
        return ""
    outside = _bound_in([s for s in model.tree.body if s is not guard])
    only_guard = guard_bound - outside - _BUILTINS
    if not only_guard:
        return ""
    for fn in _reached(model, entry):
        local = _locals(fn)
        reads = [
            node
            for node in ast.walk(fn)
            if isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id in only_guard
            and node.id not in local
        ]
        if reads:
            first = min(reads, key=lambda n: (n.lineno, n.col_offset))
            return (
                f"{FAILS_AT_ONCE}: `{fn.name}()` reads `{first.id}` (line "
                f"{line_ref(first.lineno)}), bound only in the `if __name__ == "
                '"__main__":` block, which the processes the XLA launcher starts do not '
                "run (they import this file): NameError there; pass it to the function "
                "or bind it at module level first"
            )
    return ""


def _bound_in(body: list[ast.stmt]) -> set[str]:
    """Names the statements bind at their own level (not inside functions or classes)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.split(".")[0])
        stack.extend(ast.iter_child_nodes(node))
    return names


def _locals(fn: FunctionNode) -> set[str]:
    declared = {n for s in ast.walk(fn) if isinstance(s, ast.Global) for n in s.names}
    args = fn.args
    names = {
        a.arg
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
        if a is not None
    }
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node is not fn:
                names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)  # a nested function's or a lambda's own parameters
    return names - declared


def _reached(model: ScriptModel, entry: FunctionNode) -> list[FunctionNode]:
    """``entry`` and the module-level functions of the script it calls, ``CALL_DEPTH`` deep."""
    found = [entry]
    frontier = [entry]
    for _ in range(CALL_DEPTH):
        following = []
        for fn in frontier:
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    callee = model.functions.get(node.func.id)
                    if callee is not None and model.is_module_level(callee) and callee not in found:
                        found.append(callee)
                        following.append(callee)
        frontier = following
    return found
