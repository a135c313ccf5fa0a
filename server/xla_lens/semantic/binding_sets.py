"""Sets of values a name may hold, for ``HostValues`` when no single binding dominates a read:
every binding of a ``global`` name in any frame, every binding of a function's own local (or,
when the function binds it nowhere, of the module's global it reads), and the stores into a
name's attributes (``args.log_interval = ...``). Supersets of what reaches the read: a value
judged host over all of them is host whichever one reaches."""

from __future__ import annotations

import ast

from .model import ScriptModel
from .reaching import scope_bindings
from .tensors import scope_of


def name_and_attribute_stores(
    model: ScriptModel,
) -> tuple[dict[str, list[ast.expr]], dict[tuple[str, str], list[ast.expr]]]:
    """``name -> values`` of ``name = v`` and ``(name, attr) -> values`` of ``name.attr = v``,
    over the whole script (built once per parse)."""
    return model.memo(name_and_attribute_stores, lambda: _stores(model))


def global_values(model: ScriptModel, ident: str) -> list[ast.expr] | None:
    """Every value a ``global`` name is bound to, in any frame (transformer-xl's
    ``train_loss = 0`` at module level, ``train_loss += loss.float().item()`` in
    ``train()``, held-out 24): a superset of what reaches a read; None when a binding
    cannot be judged (a ``for`` target, a tuple unpacking, ``with ... as``)."""
    cache: dict[str, list[ast.expr] | None] = model.memo(global_values, dict)
    if ident in cache:
        return cache[ident]
    values: list[ast.expr] | None = []
    for n in model.nodes_of(ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With):
        targets = (
            n.targets
            if isinstance(n, ast.Assign)
            else [n.target]
            if isinstance(n, ast.AugAssign | ast.AnnAssign | ast.For)
            else [i.optional_vars for i in n.items if i.optional_vars is not None]  # type: ignore[attr-defined]
        )
        for t in targets:
            if isinstance(t, ast.Name) and t.id == ident and not isinstance(n, ast.For | ast.With):
                if n.value is not None:  # type: ignore[union-attr]
                    values.append(n.value)  # type: ignore[union-attr,arg-type]
            elif any(isinstance(e, ast.Name) and e.id == ident for e in ast.walk(t)):
                values = None
                break
        if values is None:
            break
    cache[ident] = values or None
    return cache[ident]


def frame_values(model: ScriptModel, name: ast.Name) -> tuple[None, list[ast.expr]] | None:
    """A local of a function bound only in branches (``if use_gpu: ld = torch.load(a)
    else: ld = torch.load(a, map_location="cpu")``, dlrm, held-out 24): no single binding
    dominates the read, yet no parameter or caller gives the value either, so it is one
    of the frame's own bindings; or, bound nowhere in a module-level function, one of the
    module's."""
    fn = scope_of(model, name)
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    args = fn.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    if name.id in params:
        return None
    # Every binding the frame's index holds sits under one of its body's statements: the
    # same values as asking each statement in turn, without a pass per statement (which made
    # this quadratic in the module's length).
    values = scope_bindings(model, fn, name.id)
    if not values and model.is_module_level(fn):
        # Not bound in the function at all: a module global it reads (``args`` of
        # ``args = parser.parse_args()``, transformer-xl's ``args.log_interval``).
        values = scope_bindings(model, model.tree, name.id)
    return (None, values) if values else None


def _stores(
    model: ScriptModel,
) -> tuple[dict[str, list[ast.expr]], dict[tuple[str, str], list[ast.expr]]]:
    whole: dict[str, list[ast.expr]] = {}
    stores: dict[tuple[str, str], list[ast.expr]] = {}
    for n in model.nodes_of(ast.Assign):
        assert isinstance(n, ast.Assign)
        for t in n.targets:
            if isinstance(t, ast.Name):
                whole.setdefault(t.id, []).append(n.value)
            elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                stores.setdefault((t.value.id, t.attr), []).append(n.value)
    return whole, stores


def loads_of_assigned_name(model: ScriptModel, stmt: ast.AST | None) -> list[ast.Name] | None:
    """For ``name = <value>`` (one plain-name target): the reads of ``name`` in the frame the
    statement runs in; None for any other statement."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return None
    name = stmt.targets[0].id
    scope = model.enclosing_function(stmt) or model.tree
    return [
        n
        for n in model.walk_scope(scope)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    ]
