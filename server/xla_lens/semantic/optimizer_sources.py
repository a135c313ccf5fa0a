"""Whether an optimizer built before a module's move may hold that module's parameters, when
XLA109's event analysis (``optimizer_events``) cannot pair them: parameter groups gathered
from submodules through lists and loops (held-out 49's semseg: ``modules_ori = [model.layer0,
...]``, ``params_list.append(dict(params=module.parameters(), ...))``, ``SGD(params_list)``,
then ``DistributedDataParallel(model.cuda())``).

A name is derived from the module when a statement that binds or grows it (an assignment, a
``for`` target, ``name.append/extend/insert(...)``, ``name[k] = ...``) mentions the module or
another derived name; an optimizer built from a derived name (or the module itself) before the
move may hold the old Parameters. Conservative by design: it only makes a fix wait for review.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .optimizer_events import _is_optimizer_class

if TYPE_CHECKING:
    from .model import ScriptModel

GROWERS = frozenset({"append", "extend", "insert", "update", "add"})


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


# Reads of a tensor's or module's metadata: what they give carries no Parameter
# (``GAT(nfeat=features.shape[1])`` builds a model from a number, held-out 51's pyGAT).
# ``vqvae.config["latent_channels"]``: a Hugging Face / diffusers model's config, plain values
# (held-out 66's audio-diffusion sizes its UNet from the VAE's config).
METADATA_ATTRS = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "config"}
)
METADATA_METHODS = frozenset(
    {"size", "dim", "ndimension", "numel", "nelement", "element_size", "item", "tolist"}
)
# Builtins whose result is a plain number or string, whatever they read.
SCALAR_BUILTINS = frozenset({"len", "int", "float", "bool", "round", "str"})


def _flowing_names(node: ast.AST) -> set[str]:
    """The names whose values may flow into ``node``'s value: all but those read only for
    their metadata or as a Python number (``x.shape[1]``, ``x.size(0)``, ``len(x)``,
    ``int(y.max())``)."""
    skipped: set[int] = set()
    for n in ast.walk(node):
        # Metadata of anything is metadata: ``vqvae.encode(x).latent_dist.sample().shape[2:]``
        # reads no Parameter into its result, however long the chain it ends.
        if isinstance(n, ast.Attribute) and n.attr in METADATA_ATTRS:
            skipped.update(id(a) for a in ast.walk(n.value))
        elif isinstance(n, ast.Call):
            func = n.func
            if isinstance(func, ast.Attribute) and func.attr in METADATA_METHODS:
                skipped.update(id(a) for a in ast.walk(func.value))
            elif isinstance(func, ast.Name) and func.id in SCALAR_BUILTINS:
                skipped.update(id(a) for arg in n.args for a in ast.walk(arg))
        elif isinstance(n, ast.Compare):
            # ``1 if vqvae is None else ...``: a comparison gives a bool, never what it reads.
            skipped.update(id(a) for a in ast.walk(n))
    # A comprehension's own variables are not the function's names of the same spelling
    # (``[teacher.to(d) for teacher in teachers]``, held-out 57's distillation control).
    own = {
        t.id
        for n in ast.walk(node)
        if isinstance(n, ast.comprehension)
        for t in ast.walk(n.target)
        if isinstance(t, ast.Name)
    }
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and id(n) not in skipped and n.id not in own
    }


def _bound(stmt: ast.AST) -> tuple[set[str], ast.AST | None]:
    """The names ``stmt`` binds or grows, and the expression whose names flow into them."""
    if isinstance(stmt, ast.Assign):
        targets: set[str] = set()
        for t in stmt.targets:
            if isinstance(t, ast.Subscript | ast.Attribute):
                t = t.value
            targets |= _names(t)
        return targets, stmt.value
    if isinstance(stmt, ast.AugAssign | ast.AnnAssign) and stmt.value is not None:
        return _names(stmt.target), stmt.value
    if isinstance(stmt, ast.For):
        return _names(stmt.target), stmt.iter
    if (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Attribute)
        and stmt.value.func.attr in GROWERS
        and isinstance(stmt.value.func.value, ast.Name)
    ):
        return {stmt.value.func.value.id}, ast.Tuple(
            [*stmt.value.args, *(k.value for k in stmt.value.keywords)], ast.Load()
        )
    return set(), None


def optimizer_before_move(model: ScriptModel, move: ast.Call, module: str) -> ast.Call | None:
    """The first optimizer built in the function around ``move``, before it, from ``module``
    (the moved name) or a name derived from it; None when there is none."""
    scope = model.enclosing_function(move) or model.tree
    line = move.lineno
    if module == "self":
        return None  # the instance's own moves: self_optimizers' business
    table = _binding_table(model, scope)
    statements = [stmt for stmt, _, _ in table if stmt.lineno < line]
    builds = [
        c
        for c, names in _optimizer_builds(model, scope)
        if names & _derived(model, table, module, c)
    ]
    before = [c for c in builds if c.lineno < line]
    if not before or any(c.lineno > line for c in builds):
        return None  # none before, or rebuilt after the move (the later one is used)
    build = before[0]
    for node in statements:
        if node.lineno >= build.lineno:
            break
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            if _moves(model, call, module):
                return None  # moved before the build already: this move keeps its Parameters
    return build


def _derived(
    model: ScriptModel,
    table: list[tuple[ast.stmt, set[str], set[str]]],
    module: str,
    build: ast.AST,
) -> set[str]:
    """The names holding what comes from ``module`` when ``build`` runs: bound by statements
    above it, or by any statement of a loop around it (a loop feeds names bound above them:
    to a fixpoint)."""
    loops = [a for a in model.ancestors(build) if isinstance(a, ast.For | ast.While)]
    spans = [(a.lineno, a.end_lineno or a.lineno) for a in loops]
    line = build.lineno  # type: ignore[attr-defined]
    rows = [
        (names, sources)
        for stmt, names, sources in table
        if names and (stmt.lineno < line or any(lo <= stmt.lineno <= hi for lo, hi in spans))
    ]
    derived = {module}
    changed = True
    while changed:
        changed = False
        for names, sources in rows:
            if not names <= derived and sources & derived:
                derived |= names
                changed = True
    return derived


def _names_args(call: ast.Call) -> set[str]:
    out: set[str] = set()
    for a in (*call.args, *(k.value for k in call.keywords)):
        out |= _names(a)
    return out


def _optimizer_builds(model: ScriptModel, scope: ast.AST) -> list[tuple[ast.Call, set[str]]]:
    """The optimizers built in ``scope`` in source order, each with the names its arguments
    read; once per scope and parse (asked for every move)."""

    def build() -> list[tuple[ast.Call, set[str]]]:
        calls = [
            n
            for n in model.walk_scope(scope)
            if isinstance(n, ast.Call) and _is_optimizer_class(model, n)
        ]
        calls.sort(key=lambda c: (c.lineno, c.col_offset))
        return [(c, _names_args(c)) for c in calls]

    return model.memo((_optimizer_builds, scope), build)


def _binding_table(model: ScriptModel, scope: ast.AST) -> list[tuple[ast.stmt, set[str], set[str]]]:
    """``scope``'s statements (nested functions' bodies left out) in source order, each with
    the names it binds or grows and the names flowing into them; once per scope and parse."""

    def build() -> list[tuple[ast.stmt, set[str], set[str]]]:
        statements = [
            n
            for n in model.walk_scope(scope)
            if isinstance(n, ast.stmt) and not isinstance(n, ast.FunctionDef)
        ]
        statements.sort(key=lambda n: (n.lineno, n.col_offset))
        table = []
        for stmt in statements:
            names, source = _bound(stmt)
            flowing = _flowing_names(source) if source is not None and names else set()
            table.append((stmt, names, flowing))
        return table

    return model.memo((_binding_table, scope), build)


def _moves(model: ScriptModel, call: ast.Call, module: str) -> bool:
    from .optimizer_events import moves_to_a_device  # noqa: PLC0415

    if not moves_to_a_device(model, call) or not isinstance(call.func, ast.Attribute):
        return False
    root = call.func.value
    while isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute):
        root = root.func.value  # ``Net().to(d)`` bound to the module below
    if isinstance(root, ast.Name) and root.id == module:
        return True
    parent = model.parent(call)
    return isinstance(parent, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == module for t in parent.targets
    )
