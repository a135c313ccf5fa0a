"""Functions that build and return an optimizer from a module they are handed, in this file or
in another file of the workspace (TorchSSL's ``get_optimizer(net, ...)`` in train_utils.py:
``for name, param in net.named_parameters()`` sorts the Parameters into decay / no-decay lists,
``torch.optim.SGD([{'params': decay}, ...])`` is returned; held-out 49 and 55).

The caller's ``optimizer = get_optimizer(model.model, ...)`` then holds ``model.model``'s
Parameters: a later move of ``model.model`` to the XLA device makes new ones and the optimizer
keeps updating the CPU copies. Read from the function's own text (the names its Parameters
flow into, through assignments, ``for`` targets and ``list.append``), never run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .node_helpers import dotted
from .optimizer_events import OPTIMIZER_MODULES, OPTIMIZER_NAMES
from .optimizer_sources import _bound, _flowing_names
from .workspace_calls import ParsedModule, helper_target, parsed_module

if TYPE_CHECKING:
    from .model import ScriptModel

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _statements(fn: Function) -> list[ast.stmt]:
    """``fn``'s statements in source order, nested functions and classes left out."""
    out: list[ast.stmt] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            out.append(node)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
        todo.extend(ast.iter_child_nodes(node))
    out.sort(key=lambda s: (s.lineno, s.col_offset))
    return out


def _returned_optimizers(
    statements: list[ast.stmt], is_optimizer: Callable[[ast.Call], bool]
) -> list[ast.Call]:
    """The optimizer calls whose result ``return`` hands back: ``return SGD(...)``, or a name
    bound to one and returned (alone or in a tuple)."""
    bound: dict[str, list[ast.Call]] = {}
    for stmt in statements:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call)
            and is_optimizer(stmt.value)
        ):
            bound.setdefault(stmt.targets[0].id, []).append(stmt.value)
    out: list[ast.Call] = []
    for stmt in statements:
        if not isinstance(stmt, ast.Return) or stmt.value is None:
            continue
        values = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
        for value in values:
            if isinstance(value, ast.Call) and is_optimizer(value):
                out.append(value)
            elif isinstance(value, ast.Name):
                out.extend(bound.get(value.id, ()))
    return out


def built_parameters(fn: Function, is_optimizer: Callable[[ast.Call], bool]) -> dict[str, int]:
    """``fn``'s parameters whose Parameters an optimizer it returns is built from, each with the
    line of that build."""
    statements = _statements(fn)
    builds = _returned_optimizers(statements, is_optimizer)
    if not builds:
        return {}
    table = []
    for stmt in statements:
        names, source = _bound(stmt)
        if names and source is not None:
            table.append((names, _flowing_names(source)))
    args = fn.args
    out: dict[str, int] = {}
    for param in (a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)):
        if param in ("self", "cls"):
            continue
        derived = {param}
        changed = True
        while changed:  # loops feed names bound above them: to a fixpoint
            changed = False
            for names, sources in table:
                if not names <= derived and sources & derived:
                    derived |= names
                    changed = True
        for call in builds:
            given = ast.Tuple([*call.args, *(k.value for k in call.keywords)], ast.Load())
            if _flowing_names(given) & derived:
                out.setdefault(param, call.lineno)
    return out


def _foreign_name(module: ParsedModule, expr: ast.expr) -> str:
    """``expr``'s qualified name as the other file's imports spell it (``optim.SGD`` after
    ``from torch import optim`` is ``torch.optim.SGD``); its text when no import binds it."""
    text = dotted(expr) or ""
    root, dot, rest = text.partition(".")
    if root in module.imports:
        return module.imports[root] + dot + rest
    if root in module.reexports:
        source, level, name = module.reexports[root]
        if level == 0 and source:
            return f"{source}.{name}{dot}{rest}"
    return text


def is_optimizer_qualname(name: str) -> bool:
    last = name.rpartition(".")[2]
    if not last[:1].isupper() or last == "Optimizer" or "lr_scheduler" in name:
        return False
    return name.startswith(OPTIMIZER_MODULES) or name in OPTIMIZER_NAMES


def _foreign_built(module: ParsedModule, fn: Function) -> dict[str, int]:
    return built_parameters(
        fn, lambda call: is_optimizer_qualname(_foreign_name(module, call.func))
    )


def _handed(call: ast.Call, fn: Function, name: str, skip: int) -> ast.expr | None:
    positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][skip:]
    if name in positional and not any(isinstance(a, ast.Starred) for a in call.args):
        index = positional.index(name)
        if index < len(call.args):
            return call.args[index]
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def _parameters_owner(handed: ast.expr) -> ast.expr | None:
    """``model`` of a handed ``model.parameters()`` (also inside ``filter(..., ...)``):
    deep-person-reid's ``init_optim(args.optim, model.parameters(), ...)`` (held-out 73)."""
    for n in ast.walk(handed):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("parameters", "named_parameters")
            and dotted(n.func.value) is not None
        ):
            return n.func.value
    return None


def helper_builds(model: ScriptModel) -> list[tuple[ast.Call, ast.expr, str]]:
    """The script's calls of functions (its own, or a workspace module's) that return an
    optimizer built from a module the call hands them: (call, the handed expression, where
    the build is in another file: "train_utils.py:14")."""

    def build() -> list[tuple[ast.Call, ast.expr, str]]:
        from .optimizer_events import _is_optimizer_class  # noqa: PLC0415

        own: dict[str, dict[str, int]] = {}
        out: list[tuple[ast.Call, ast.expr, str]] = []
        script = Path(model.path) if model.path and not model.path.startswith("<") else None
        for call in model.calls:
            func = call.func
            if isinstance(func, ast.Name) and func.id in model.functions:
                fn = model.functions[func.id]
                if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                if func.id not in own:
                    own[func.id] = built_parameters(fn, lambda c: _is_optimizer_class(model, c))
                built, where = own[func.id], ""
            elif script is not None:
                target = helper_target(model, call)
                parsed = parsed_module(target.path) if target is not None else None
                fn = parsed.functions.get(target.function) if parsed and target else None
                if fn is None or target is None or target.path == script:
                    continue
                built = model.memo(
                    ("helper_optimizers", str(target.path), target.function),
                    lambda parsed=parsed, fn=fn: _foreign_built(parsed, fn),
                )
                where = f"{target.path.name}:{{}}"
            else:
                continue
            for param, line in built.items():
                handed = _handed(call, fn, param, 0)
                if handed is not None and dotted(handed) is None:
                    handed = _parameters_owner(handed)
                if handed is not None and dotted(handed) is not None:
                    out.append((call, handed, where.format(line) if where else ""))
        return out

    return model.memo(("helper_optimizers",), build)
