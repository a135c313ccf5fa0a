"""Training loops whose batches come from a DataLoader that went through accelerate's ``prepare``.

On XLA ``accelerator.prepare(..., loader)`` (and ``prepare_data_loader``) hands a DataLoader
back wrapped in ``MpDeviceLoaderWrapper``, an ``MpDeviceLoader``: every fetch marks the step,
and so does the end of the data (accelerate 1.16, ``prepare_data_loader``). A loop that fetches
one of its batches every iteration is synced without a sync call of its own. Anything else
``prepare`` is given (a ``cycle(loader)`` generator) comes back as it was and never syncs.

The trainer-class shapes that ``loaders.classify`` does not follow:

- ``(self.model, self.loader) = self.accelerator.prepare(self.model, self.loader)`` in
  ``__init__`` (tuple targets that are attributes), the loop in another method;
- ``it = cycle(self.loader)`` with ``def cycle(dl): while True: for x in dl: yield x`` (a
  generator of this file that fetches again for every item it yields; ``itertools.cycle``
  is not one: after the first pass it replays what it kept and fetches nothing);
- ``next(it)`` in a helper method the loop calls (``self.next_batch_kwargs(it)``).

Proof, not likelihood: a name or attribute counts only when every value it is given is a
prepared loader, or a DataLoader that a later ``prepare`` in the same block always replaces.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .loaders import Source, classify, iterated_loader
from .model import dotted, method_name, receiver
from .node_helpers import SCOPE_TYPES
from .value_bindings import Binding, bindings_of

if TYPE_CHECKING:
    from .model import ScriptModel, TrainingLoop

PREPARE_LOADER_METHODS = frozenset({"prepare", "prepare_data_loader"})
ACCELERATOR_CLASSES = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
# Wrappers that hand out the items of their first argument one by one, fetching each.
TRANSPARENT = frozenset({"iter", "enumerate"})
SLICERS = frozenset({"itertools.islice"})
MAX_DEPTH = 8  # hops through names, attributes and wrappers


class Feed(enum.Enum):
    # ``for batch in prepared_loader``: a sync before each batch and after the last one.
    ITERATES = "iterates"
    # ``next()`` on it (or on a generator over it) once per iteration: the sync comes when
    # the next batch is fetched, so nothing syncs after the last step.
    DRAWS = "draws"


def prepared_feed(model: ScriptModel, loop: TrainingLoop) -> Feed | None:
    """How a prepared loader syncs this training loop every iteration (None: not provably)."""
    if not _imports_accelerate(model):
        return None
    # XLA107 asks once per loop, XLA401 once per report in it.
    return model.memo((prepared_feed, loop.node), lambda: _feed(model, loop))


def _feed(model: ScriptModel, loop: TrainingLoop) -> Feed | None:
    it = iterated_loader(model, loop.node)
    if it is not None:
        wrapped = _prepared(model, it, 0)
        if wrapped is not None:
            return Feed.DRAWS if wrapped else Feed.ITERATES
    for drawn in _draws(model, loop.node, loop.node, {}, 0):
        if _prepared(model, drawn, 0) is not None:
            return Feed.DRAWS
    return None


def _imports_accelerate(model: ScriptModel) -> bool:
    return any(t.split(".")[0] == "accelerate" for t in model.imports.values())


# --- where a loop fetches ---------------------------------------------------------------------
def _draws(
    model: ScriptModel, root: ast.AST, region: ast.AST, given: dict[str, ast.expr], depth: int
) -> Iterator[ast.expr]:
    """What ``next(...)`` reads every iteration in ``region`` (the loop, or a function it
    calls: then ``given`` maps its parameters to the caller's arguments)."""
    walker = model.walk(region) if region is root else model.walk_scope(region)
    for node in walker:
        if not isinstance(node, ast.Call) or not _every_iteration(model, node, region):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == "next" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Name) and arg.id in given:
                yield given[arg.id]
            else:
                yield arg
        elif depth < 2:
            callee = model.steps.callee(node)
            if callee is not None and callee is not region:
                yield from _draws(model, root, callee, _passed(model, node, callee), depth + 1)


def _every_iteration(model: ScriptModel, node: ast.AST, region: ast.AST) -> bool:
    """No branch between ``node`` and ``region``: it runs each time ``region`` runs (loops
    nested in it, ``with`` and ``try`` bodies are taken to run)."""
    child = node
    for a in model.ancestors(node):
        if isinstance(a, ast.If | ast.IfExp | ast.BoolOp | ast.match_case | ast.ExceptHandler):
            return False
        if isinstance(a, (*SCOPE_TYPES, ast.comprehension)) and a is not region:
            return False
        if isinstance(a, ast.For | ast.AsyncFor | ast.While | ast.Try) and child in a.orelse:
            return False
        if isinstance(a, ast.While) and a is not region:
            return False
        if a is region:
            return True
        child = a
    return False


def _passed(model: ScriptModel, call: ast.Call, fn: ast.AST) -> dict[str, ast.expr]:
    """The callee's parameters bound to this call's arguments."""
    assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if isinstance(model.parent(fn), ast.ClassDef) and params:
        params = params[1:]
    out: dict[str, ast.expr] = {}
    for name, arg in zip(params, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        out[name] = arg
    out.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    rebound = {
        n.id
        for n in model.walk_scope(fn)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)
    }
    return {k: v for k, v in out.items() if k not in rebound}


# --- what a value is --------------------------------------------------------------------------
def _prepared(model: ScriptModel, node: ast.AST, depth: int) -> bool | None:
    """None when ``node`` is not provably a prepared loader; else whether it is wrapped in
    something that fetches from it item by item but does not end with it (a generator,
    ``islice``)."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(node, ast.Call):
        return _prepared_call(model, node, depth)
    if isinstance(node, ast.Name | ast.Attribute):
        bindings = bindings_of(model, node)
        if bindings is None:
            return None
        if isinstance(bindings, list) and not bindings:
            return None
        if not isinstance(bindings, list):
            # A parameter: what every call site of this file passes.
            kinds = [_prepared(model, v, depth + 1) for v in bindings[0]]
            if not kinds or any(k is None for k in kinds):
                return None
            return any(kinds)
        return _all_bound_prepared(model, node, bindings, depth)
    return None


def _prepared_call(model: ScriptModel, call: ast.Call, depth: int) -> bool | None:
    func = call.func
    name = model.call_name(call) or ""
    builtin = isinstance(func, ast.Name) and func.id not in model.imports
    if builtin and isinstance(func, ast.Name) and func.id in TRANSPARENT and call.args:
        return _prepared(model, call.args[0], depth + 1)
    if name.rpartition(".")[2] == "tqdm" and call.args:
        return _prepared(model, call.args[0], depth + 1)
    if name in SLICERS and call.args:
        return None if _prepared(model, call.args[0], depth + 1) is None else True
    if _is_prepare(model, call):
        args = call.args
        if len(args) == 1 and not call.keywords and _is_loader(model, args[0], depth + 1):
            return False
        return None
    callee = model.steps.callee(call)
    if isinstance(callee, ast.FunctionDef) and not isinstance(model.parent(callee), ast.ClassDef):
        index = _refetched_parameter(model, callee)
        if index is not None and index < len(call.args):
            arg = call.args[index]
            if not isinstance(arg, ast.Starred):
                return None if _prepared(model, arg, depth + 1) is None else True
    return None


def _refetched_parameter(model: ScriptModel, fn: ast.FunctionDef) -> int | None:
    """``def cycle(dl): while True: for x in dl: yield x`` (or ``yield from dl``): the
    position of the parameter a generator fetches from once for every item it yields."""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    sources: set[str] = set()
    per_loop: dict[ast.AST, int] = {}
    for node in model.walk_scope(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in params:
            return None
        if isinstance(node, ast.YieldFrom):
            if not isinstance(node.value, ast.Name):
                return None
            sources.add(node.value.id)
        elif isinstance(node, ast.Yield):
            loop = model.innermost_loop(node)
            if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Name):
                return None
            if any(node is n for n in model.walk(loop.iter)) or any(
                node is n for s in loop.orelse for n in model.walk(s)
            ):
                return None
            sources.add(loop.iter.id)
            per_loop[loop] = per_loop.get(loop, 0) + 1
    if len(sources) != 1 or any(count != 1 for count in per_loop.values()):
        return None
    (source,) = sources
    return params.index(source) if source in params else None


def _is_prepare(model: ScriptModel, call: ast.Call) -> bool:
    if method_name(call) not in PREPARE_LOADER_METHODS:
        return False
    return is_accelerator(model, receiver(call))


def is_accelerator(model: ScriptModel, node: ast.AST | None) -> bool:
    """``accelerator`` bound to ``Accelerator(...)`` (not ``cpu=True``), or handed in under
    that name: its ``device`` is the XLA device when accelerate runs on XLA."""
    path = dotted(node) if node is not None else None
    if path is None:
        return False
    built = _accelerators(model)
    if path in built:
        return built[path]
    return "accelerator" in path.rpartition(".")[2].lower()


def _accelerators(model: ScriptModel) -> dict[str, bool]:
    """Paths bound to ``Accelerator(...)``: False for ``cpu=True`` (nothing goes to XLA)."""

    def compute() -> dict[str, bool]:
        out: dict[str, bool] = {}
        for node in model.nodes_of(ast.Assign):
            assert isinstance(node, ast.Assign)
            value = node.value
            if not isinstance(value, ast.Call) or model.call_name(value) not in ACCELERATOR_CLASSES:
                continue
            on_cpu = any(
                k.arg == "cpu" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in value.keywords
            )
            for target in node.targets:
                path = dotted(target)
                if path is not None:
                    out[path] = out.get(path, False) or not on_cpu
        return out

    return model.memo(_accelerators, compute)


def _is_loader(model: ScriptModel, node: ast.AST, depth: int) -> bool:
    """``node`` is a DataLoader (or an XLA loader) when it is handed to ``prepare``: every
    value bound to it, other than what ``prepare`` itself hands back."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(node, ast.Call):
        return classify(model, node) in (Source.PLAIN, Source.XLA)
    if not isinstance(node, ast.Name | ast.Attribute):
        return False
    bindings = bindings_of(model, node)
    if bindings is None:
        return False
    if not isinstance(bindings, list):
        values = bindings[0]
        return bool(values) and all(_is_loader(model, v, depth + 1) for v in values)
    raw = [
        value
        for _, value, _ in bindings
        if not (isinstance(value, ast.Call) and _is_prepare(model, value))
    ]
    return bool(raw) and all(_is_loader(model, v, depth + 1) for v in raw)


def _all_bound_prepared(
    model: ScriptModel, read: ast.AST, bindings: list[Binding], depth: int
) -> bool | None:
    """Every binding is a prepared loader, or a value that a prepared binding later in the
    same block always replaces before ``read``."""
    prepared: list[tuple[ast.stmt, bool]] = []
    others: list[ast.stmt] = []
    for stmt, value, unpacked in bindings:
        kind = _bound_kind(model, value, unpacked, depth)
        if kind is None:
            others.append(stmt)
        else:
            prepared.append((stmt, kind))
    if not prepared:
        return None
    for stmt in others:
        if not any(_replaced(model, stmt, later, read) for later, _ in prepared):
            return None
    return any(kind for _, kind in prepared)


def _bound_kind(
    model: ScriptModel, value: ast.expr, unpacked: tuple[int, int] | None, depth: int
) -> bool | None:
    if unpacked is None:
        return _prepared(model, value, depth + 1)
    # ``model, loader = accelerator.prepare(model, loader)``: matched by position.
    index, length = unpacked
    if not (isinstance(value, ast.Call) and _is_prepare(model, value)):
        return None
    if any(isinstance(a, ast.Starred) for a in value.args) or len(value.args) != length:
        return None
    return False if _is_loader(model, value.args[index], depth + 1) else None


def _replaced(model: ScriptModel, earlier: ast.stmt, later: ast.stmt, read: ast.AST) -> bool:
    """``later`` runs whenever ``earlier`` has run (it follows in a block that holds
    ``earlier``), in the same function, and ``read`` is not in between."""
    if model.enclosing_function(earlier) is not model.enclosing_function(later):
        return False
    block = model.parent(later)
    child: ast.AST = earlier
    for a in model.ancestors(earlier):
        if a is block:
            break
        child = a
    else:
        return False
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(block, field, None)
        if isinstance(stmts, list) and later in stmts:
            if child not in stmts or stmts.index(child) >= stmts.index(later):
                return False
            break
    else:
        return False
    if model.enclosing_function(read) is model.enclosing_function(earlier):
        start, end = earlier.lineno, later.end_lineno or later.lineno
        line = getattr(read, "lineno", 0)
        if start <= line <= end:
            return False
    return True
