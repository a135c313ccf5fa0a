"""Where a training loop gets its batches, and whether that source already syncs on XLA.

``pl.MpDeviceLoader`` / ``ParallelLoader`` upload batches and mark the step at every
iteration, so a loop fed by one needs no explicit sync, and wrapping its loader again
breaks training (the inner loader thread fails, zero steps run, the exit code is 0). The
loader is often not visible where the loop is: a function parameter, an attribute set in
a constructor, ``next(it)`` on an iterator, or what a helper of the file returns. This
module answers with three states: an XLA loader, a plain loader, or unknown — and rules
treat unknown cautiously.
"""

from __future__ import annotations

import ast
import enum
from typing import TYPE_CHECKING

from .model import XLA_LOADERS, dotted, method_name
from .params import argument_values, parameter_of

if TYPE_CHECKING:
    from .model import ScriptModel, TrainingLoop

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# Wrappers that yield what they iterate: the loader is their first argument.
PASS_THROUGH = frozenset({"enumerate", "iter"})
# ``xrange``: Python 2's range, still in old training code through ``six.moves`` or a star
# import (MCD_DA's solver, held-out 89).
COUNTERS = frozenset(
    {"range", "xrange", "six.moves.xrange", "itertools.count", "tqdm.trange", "tqdm.auto.trange"}
)
# Methods custom loaders use to hand out the next batch.
NEXT_BATCH_METHODS = frozenset({"next", "next_batch", "get_batch", "__next__"})
# Calls that hand out (part of) the loader they are given: ``islice(loader, n)``.
LOADER_SLICERS = frozenset({"itertools.islice", "itertools.cycle", "itertools.chain"})


class Source(enum.Enum):
    XLA = "xla"  # an MpDeviceLoader / ParallelLoader: uploads and syncs each iteration
    PLAIN = "plain"  # provably a torch DataLoader
    UNKNOWN = "unknown"  # a parameter, attribute or helper result we cannot follow
    NONE = "none"  # the loop draws no data (a counter loop without next())


def _is_tqdm(model: ScriptModel, call: ast.Call) -> bool:
    name = model.call_name(call) or dotted(call.func) or ""
    return name.split(".")[-1] == "tqdm"


def _wraps_iterable(model: ScriptModel, call: ast.Call) -> bool:
    """``tqdm(x, ...)`` or the builtin ``enumerate(x)``/``iter(x)``: yields what ``x`` yields."""
    if not call.args or isinstance(call.args[0], ast.Starred):
        return False
    func = call.func
    builtin = (
        isinstance(func, ast.Name) and func.id in PASS_THROUGH and func.id not in model.imports
    )
    return builtin or _is_tqdm(model, call)


def iterated_loader(model: ScriptModel, loop: ast.AST) -> ast.expr | None:
    """The expression a ``for`` loop draws its batches from, through ``enumerate``/``tqdm``."""
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return None
    node: ast.expr = loop.iter
    while isinstance(node, ast.Call) and _wraps_iterable(model, node):
        node = node.args[0]
    return node


def is_counter(model: ScriptModel, node: ast.AST | None) -> bool:
    if not isinstance(node, ast.Call):
        return isinstance(node, ast.List | ast.Tuple | ast.Constant)
    name = model.call_name(node) or (node.func.id if isinstance(node.func, ast.Name) else None)
    return name in COUNTERS


def _is_xla_loader_value(model: ScriptModel, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    return model.call_name(node) in XLA_LOADERS or method_name(node) == "per_device_loader"


def is_xla_loader(model: ScriptModel, node: ast.AST | None) -> bool:
    """``pl.MpDeviceLoader(...)``, ``....per_device_loader(d)``, or a name bound to one."""
    return classify(model, node) is Source.XLA


DRAWING = frozenset({"zip", "itertools.cycle", "itertools.islice", "itertools.chain"})


def _draws_from_arguments(model: ScriptModel, call: ast.Call) -> bool:
    """``zip(...)``, ``cycle(x)``, ``islice(x, n)``: iterating the call draws from its
    arguments as it goes."""
    name = model.call_name(call) or (call.func.id if isinstance(call.func, ast.Name) else "")
    # The project's own ``cycle(iterable)`` generator (onsets-and-frames' utils) by its name.
    return (name in DRAWING or name == "cycle" or name.endswith(".cycle")) and bool(call.args)


def _draws_xla(model: ScriptModel, call: ast.Call, hops: int) -> bool:
    if not _draws_from_arguments(model, call) or hops >= 3:
        return False
    return any(
        _draws_xla(model, a, hops + 1)
        if isinstance(a, ast.Call) and _draws_from_arguments(model, a)
        else classify(model, a, 1) is Source.XLA
        for a in call.args
    )


def _unwrap_iter(node: ast.AST) -> ast.AST:
    """``iter(x)`` → ``x``: an iterator over a loader is that loader."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "iter"
        and len(node.args) == 1
    ):
        node = node.args[0]
    return node


def classify(model: ScriptModel, node: ast.AST | None, depth: int = 0) -> Source:
    """What kind of loader ``node`` is."""
    if node is None:
        return Source.NONE
    # Every loop asks, and a name is followed through all its assignments: answer each
    # (expression, depth) once per parse.
    cache: dict[tuple[ast.AST, int], Source] = model.memo(classify, dict)
    key = (node, depth)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _classify(model, node, depth)
    return found


def _prepared_by_accelerate(model: ScriptModel, name: str, depth: int) -> bool:
    """``model, opt, loader = accelerator.prepare(model, opt, loader)``: on XLA accelerate
    hands back its MpDeviceLoader wrapper, which uploads and syncs every iteration — for a
    DataLoader only: anything else it is given (a ``cycle(loader)`` generator) comes back as
    it was, and nothing syncs."""
    if not any(t.split(".")[0] == "accelerate" for t in model.imports.values()):
        return False
    for a in model.nodes_of(ast.Assign):
        assert isinstance(a, ast.Assign)
        if not (isinstance(a.value, ast.Call) and method_name(a.value) == "prepare"):
            continue
        args = a.value.args
        for target in a.targets:
            names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
            for i, n in enumerate(names):
                if not (isinstance(n, ast.Name) and n.id == name):
                    continue
                given = args[i] if i < len(args) and len(args) == len(names) else None
                if given is None or isinstance(given, ast.Starred):
                    return True  # not matched by position: as before, trust prepare
                if isinstance(given, ast.Name) and given.id == name:
                    # loader = prepare(loader): judged by what the name held before; a
                    # DataLoader a helper of another module returns counts (mini-sd-scripts'
                    # build_dreambooth_dataloader, held-out 90).
                    return any(
                        classify(model, v, depth + 1) in (Source.PLAIN, Source.XLA)
                        or _returns_loaders(model, v, depth)
                        or (isinstance(v, ast.Call) and _workspace_returns(model, v, DATALOADERS))
                        for v in model.assigned_from(name)
                        if v is not a.value
                    )
                return classify(model, given, depth + 1) in (Source.PLAIN, Source.XLA)
    return False


def _returns_loaders(model: ScriptModel, value: ast.AST, depth: int) -> bool:
    """``self._get_dataloader("train")``: a function or method of this file whose every
    ``return`` hands out a DataLoader (or an XLA loader), judged as ``_factory_kind`` judges
    XLA loaders (held-out 48's Omega-Net, whose loader accelerate then prepares)."""
    if not isinstance(value, ast.Call) or depth >= 3:
        return False
    fn = model.steps.callee(value)
    if fn is None:
        return False
    scope = list(model.walk_scope(fn))
    if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in scope):
        return False
    returns = [n for n in scope if isinstance(n, ast.Return)]
    return bool(returns) and all(
        r.value is not None
        and _returned_kind(model, fn, r, r.value, depth) in (Source.PLAIN, Source.XLA)
        for r in returns
    )


def _classify(model: ScriptModel, node: ast.AST, depth: int) -> Source:
    node = _unwrap_iter(node)
    if _is_xla_loader_value(model, node):
        return Source.XLA
    if isinstance(node, ast.Call) and _wraps_iterable(model, node):
        # ``pbar = tqdm(para_loader.per_device_loader(device))``, later ``for b in pbar``: a
        # progress bar (or ``enumerate``) over an XLA loader still draws from it, syncing each
        # step. Other kinds stay as they were judged before (a wrapped DataLoader is not
        # rewritten through the name).
        if classify(model, node.args[0], depth + 1) is Source.XLA:
            return Source.XLA
    if depth == 0 and isinstance(node, ast.Call) and _draws_xla(model, node, 0):
        # ``for i, batch in zip(tqdm(range(n)), cycle(mp_device_loader))`` (onsets-and-frames,
        # held-out 127): each pass draws a batch from the XLA loader inside, which uploads and
        # syncs. Only the loop's own expression: a ``next()`` on a name bound to ``cycle(...)``
        # syncs at the fetch of the next batch, which XLA401 judges on its own.
        return Source.XLA
    if isinstance(node, ast.Call):
        if model.call_name(node) in DATALOADERS:
            return Source.PLAIN
        return _factory_kind(model, node, None, depth)
    if isinstance(node, ast.Name) and depth < 3:
        param = parameter_of(model, node)
        if param is not None:
            if param[1] == 1 and _legacy_data_parallel_loop(model, param[0]):
                return Source.XLA
            kinds = {classify(model, v, depth + 1) for v in argument_values(model, *param)}
            if Source.XLA in kinds:
                return Source.XLA
            return Source.PLAIN if kinds == {Source.PLAIN} else Source.UNKNOWN
        if _prepared_by_accelerate(model, node.id, depth):
            return Source.XLA
        kinds = _name_value_kinds(model, node.id, depth) | _unpacked_kinds(model, node.id, depth)
        if Source.XLA in kinds:
            return Source.XLA
        if Source.PLAIN in kinds:
            if _rebound_unknown(model, node, depth):
                return Source.UNKNOWN
            return Source.PLAIN
    if isinstance(node, ast.IfExp) and depth < 3:
        # ``self.train_loader if train else self.test_loader``, and a value chosen for the
        # device (``pl.MpDeviceLoader(loader, dev) if self.xla else loader``, held-out 154's
        # splice_wave control): an XLA loader on either side is the script's own XLA path.
        kinds = {classify(model, node.body, depth + 1), classify(model, node.orelse, depth + 1)}
        if Source.XLA in kinds:
            return Source.XLA
        if kinds == {Source.PLAIN}:
            return Source.PLAIN
        return Source.UNKNOWN
    if isinstance(node, ast.Attribute) and depth < 3:
        # ``self.loader``: what the script assigns to that attribute anywhere.
        kinds = _attribute_value_kinds(model, node.attr, depth)
        if Source.XLA in kinds:
            return Source.XLA
        if kinds == {Source.PLAIN}:
            return Source.PLAIN
    return Source.UNKNOWN


# torch_xla's old DataParallel, and its name in the first torch_xla releases (``torch_xla_py``:
# allenai's tpu_pretrain, held-out 87).
LEGACY_DATA_PARALLEL = frozenset(
    {"torch_xla.distributed.data_parallel.DataParallel", "torch_xla_py.data_parallel.DataParallel"}
)


def _legacy_data_parallel_loop(model: ScriptModel, fn: ast.AST) -> bool:
    """``fn`` is the loop function handed to torch_xla's old ``DataParallel``: ``model =
    dp.DataParallel(net, device_ids=devices)`` then ``model(train_loop_fn, loader)``, which
    calls ``train_loop_fn(net, per_device_loader, device, context)`` with a ParallelLoader's
    per-device loader (it uploads and syncs every step, and yields ``(step, batch)``;
    held-out 85's fashion-kaggle control)."""
    name = getattr(fn, "name", None)
    if name is None:
        return False
    for call in model.calls:
        if not (
            isinstance(call.func, ast.Name)
            and call.args
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == name
        ):
            continue
        if any(
            isinstance(v, ast.Call) and model.call_name(v) in LEGACY_DATA_PARALLEL
            for v in model.assigned_from(call.func.id)
        ):
            return True
    return False


def legacy_data_parallel_step_index(model: ScriptModel, loop: ast.AST) -> str | None:
    """The name of the step index in ``for x, (data, target) in loader`` over the per-device
    loader of torch_xla's old DataParallel (a Python int), or None."""
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return None
    target = loop.target
    if not (
        isinstance(target, ast.Tuple)
        and len(target.elts) == 2
        and isinstance(target.elts[0], ast.Name)
        and isinstance(loop.iter, ast.Name)
    ):
        return None
    param = parameter_of(model, loop.iter)
    if param is None or param[1] != 1 or not _legacy_data_parallel_loop(model, param[0]):
        return None
    return target.elts[0].id


def _rebound_unknown(model: ScriptModel, node: ast.Name, depth: int) -> bool:
    """The loop's own function binds the name again to something not known as a loader:
    ResNeSt's ``criterion, train_loader = get_criterion(cfg, train_loader, args.gpu)`` after
    ``train_loader = DataLoader(...)``, which with mixup returns a generator that moves its
    batches with ``.cuda()`` (held-out 124): wrapping that in pl.MpDeviceLoader turned a
    crash into a run that trains no step and exits 0."""
    stores = [u for u in model.name_nodes(node.id) if isinstance(u.ctx, ast.Store)]
    # The function that binds the name for this read: its own, or one it is nested in (the
    # ``def train(epoch):`` closure inside ResNeSt's main_worker).
    scope = model.enclosing_function(node)
    while scope is not None and not any(model.enclosing_function(u) is scope for u in stores):
        scope = model.enclosing_function(scope)
    for use in stores:
        if model.enclosing_function(use) is not scope:
            continue
        assign = model.parent(use)
        index: tuple[int, int] | None = None
        if isinstance(assign, ast.Tuple | ast.List):
            elts = assign.elts
            i = next(k for k, e in enumerate(elts) if e is use)
            starred = any(isinstance(e, ast.Starred) for e in elts)
            index = None if starred else (i, len(elts))
            assign = model.parent(assign)
        if not isinstance(assign, ast.Assign):
            continue  # a ``for``/``with`` target: judged where it is iterated
        value = assign.value
        if index is not None:
            kind = (
                _factory_kind(model, value, index, depth)
                if isinstance(value, ast.Call)
                else Source.UNKNOWN
            )
        else:
            kind = classify(model, value, depth + 1)
        if kind is Source.UNKNOWN:
            return True
    return False


def _name_value_kinds(model: ScriptModel, name: str, depth: int) -> set[Source]:
    """The kinds of every value assigned to ``name`` (once per name, depth and parse: asked
    per use of the name, classifying every value each time was quadratic on big files)."""
    cache: dict[tuple[str, int], set[Source]] = model.memo(_name_value_kinds, dict)
    key = (name, depth)
    kinds = cache.get(key)
    if kinds is None:
        kinds = cache[key] = {classify(model, v, depth + 1) for v in model.assigned_from(name)}
    return kinds


def _unpacked_kinds(model: ScriptModel, name: str, depth: int) -> set[Source]:
    """The kinds of ``name`` where it is unpacked from a call of this file's functions
    (``train_loader, n = get_loader(bs)``): the matching element of what it returns (once
    per name, depth and parse)."""
    cache: dict[tuple[str, int], set[Source]] = model.memo(_unpacked_kinds, dict)
    key = (name, depth)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _unpacked(model, name, depth)
    return found


def _unpacked(model: ScriptModel, name: str, depth: int) -> set[Source]:
    kinds: set[Source] = set()
    for a in model.nodes_of(ast.Assign):
        assert isinstance(a, ast.Assign)
        if not isinstance(a.value, ast.Call):
            continue
        for target in a.targets:
            if not isinstance(target, ast.Tuple | ast.List):
                continue
            for i, n in enumerate(target.elts):
                if isinstance(n, ast.Name) and n.id == name:
                    starred = any(isinstance(e, ast.Starred) for e in target.elts)
                    index = None if starred else (i, len(target.elts))
                    kinds.add(_factory_kind(model, a.value, index, depth))
    return kinds


def _factory_kind(
    model: ScriptModel, call: ast.Call, index: tuple[int, int] | None, depth: int
) -> Source:
    """XLA when ``call`` runs a function of this file whose every ``return`` hands out an
    XLA device loader (element ``index[0]`` of a returned tuple of ``index[1]``): projectt's
    ``loader = get_loader(...)`` over ``return pl.MpDeviceLoader(...)``. Anything less
    (a return of something else, a generator, a bare return) stays unknown."""
    fn = model.steps.callee(call) if depth < 3 else None
    if fn is None:
        return (
            Source.XLA if index is None and _workspace_xla_loader(model, call) else Source.UNKNOWN
        )
    scope = list(model.walk_scope(fn))
    if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in scope):
        return Source.UNKNOWN
    returns = [n for n in scope if isinstance(n, ast.Return)]
    if not returns:
        return Source.UNKNOWN
    for ret in returns:
        value = ret.value
        if index is not None:
            if not isinstance(value, ast.Tuple) or len(value.elts) != index[1]:
                return Source.UNKNOWN
            if any(isinstance(e, ast.Starred) for e in value.elts):
                return Source.UNKNOWN
            value = value.elts[index[0]]
        if value is None or _returned_kind(model, fn, ret, value, depth) is not Source.XLA:
            return Source.UNKNOWN
    return Source.XLA


def _workspace_xla_loader(model: ScriptModel, call: ast.Call) -> bool:
    """``create_parallel_loader(trainloader, device)`` from another module of the project
    whose every ``return`` is ``pl.MpDeviceLoader(...)`` (or a ParallelLoader's
    ``per_device_loader``): resnet18_pytorch_jax_tpu's utils/tpu_utils.py, held-out 90. Read
    as text on disk, never run; the function's own returns only."""

    return _workspace_returns(model, call, XLA_LOADERS)


def _workspace_returns(
    model: ScriptModel, call: ast.Call, kinds: set[str] | frozenset[str]
) -> bool:
    """Every ``return`` of the other module's function ``call`` runs is a call of one of
    ``kinds`` (qualified names, resolved through that module's imports)."""
    from .workspace_calls import helper_target, parsed_module  # noqa: PLC0415 (imports us)

    try:
        target = helper_target(model, call)
    except ValueError:
        return False
    parsed = parsed_module(target.path) if target is not None else None
    fn = parsed.functions.get(target.function) if parsed is not None and target else None
    if parsed is None or fn is None:
        return False
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    return bool(returns) and all(_loader_call(parsed, r.value, kinds) for r in returns)


def _loader_call(parsed: object, value: ast.expr | None, kinds: set[str] | frozenset[str]) -> bool:
    if not isinstance(value, ast.Call):
        return False
    if method_name(value) == "per_device_loader":
        return kinds is XLA_LOADERS
    func = value.func
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    imports: dict[str, str] = getattr(parsed, "imports", {})
    reexports: dict[str, tuple[str, int, str]] = getattr(parsed, "reexports", {})
    if isinstance(func, ast.Name):
        source = reexports.get(func.id)
        qualified = f"{source[0]}.{source[2]}" if source is not None else ""
    else:
        base = imports.get(root.id)
        if base is None and root.id in reexports:
            module, _level, name = reexports[root.id]
            base = f"{module}.{name}"
        qualified = (dotted(func) or "").replace(root.id, base or root.id, 1)
    return qualified in kinds


def _returned_kind(
    model: ScriptModel, fn: ast.AST, ret: ast.Return, value: ast.expr, depth: int
) -> Source:
    """The kind of ``value`` where ``ret`` returns it. A name local to the function is judged
    by its last binding before the return, and only when that binding runs on every path to
    it (a plain assignment in a block that holds the return): ``loader = DataLoader(ds)``
    then ``loader = pl.MpDeviceLoader(loader, d)`` returns the XLA loader, while one wrapped
    under an ``if`` may not."""
    if not isinstance(value, ast.Name):
        return classify(model, value, depth + 1)
    stores = [
        n
        for n in model.walk_scope(fn)
        if isinstance(n, ast.Name) and n.id == value.id and isinstance(n.ctx, ast.Store)
    ]
    if not stores:
        return classify(model, value, depth + 1)  # a global or a parameter
    before = [s for s in stores if (s.lineno, s.col_offset) < (ret.lineno, ret.col_offset)]
    if not before:
        return Source.UNKNOWN
    last = max(before, key=lambda s: (s.lineno, s.col_offset))
    stmt = model.parent(last)
    if not (isinstance(stmt, ast.Assign) and last in stmt.targets):
        return Source.UNKNOWN
    if model.parent(stmt) not in (ret, *model.ancestors(ret)):
        return Source.UNKNOWN
    return classify(model, stmt.value, depth + 1)


def _attribute_value_kinds(model: ScriptModel, attr: str, depth: int) -> set[Source]:
    """The kinds of every value assigned to ``<something>.attr`` in the script (once per
    attribute name, depth and parse)."""
    cache: dict[tuple[str, int], set[Source]] = model.memo(_attribute_value_kinds, dict)
    key = (attr, depth)
    kinds = cache.get(key)
    if kinds is None:
        kinds = cache[key] = {
            classify(model, a.value, depth + 1)
            for a in model.nodes_of(ast.Assign)
            if isinstance(a, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == attr for t in a.targets)
        }
    return kinds


def _next_batch_source(model: ScriptModel, loop: TrainingLoop) -> ast.AST | None:
    """The iterator a loop (or its step functions) pulls batches from with ``next(...)``."""
    for region in loop.regions():
        walker = ast.walk(region) if region is loop.node else model.walk_scope(region)
        for n in walker:
            if not isinstance(n, ast.Call):
                continue
            if isinstance(n.func, ast.Name) and n.func.id == "next" and n.args:
                return n.args[0]
            if method_name(n) in NEXT_BATCH_METHODS and isinstance(n.func, ast.Attribute):
                return n.func.value
    return None


def loop_source(model: ScriptModel, loop: TrainingLoop) -> tuple[Source, ast.AST | None]:
    """Where a training loop draws its batches, and that expression."""
    it = iterated_loader(model, loop.node)
    if it is not None and not is_counter(model, it):
        return classify(model, it), it
    pulled = _next_batch_source(model, loop)
    if pulled is not None:
        return classify(model, pulled), pulled
    return Source.NONE, None


def creates_xla_loader(model: ScriptModel) -> bool:
    return any(_is_xla_loader_value(model, c) for c in model.calls)


def passed_in_loader(model: ScriptModel, node: ast.AST | None) -> bool:
    """The loader is a parameter of the loop's function (``for x in loader``, also through
    ``loader = itertools.islice(loader, n)``) and no call in this file passes it a plain
    DataLoader: its caller lives in another module (pytorch/xla's examples hand their
    subclasses a ``pl.MpDeviceLoader`` from a base class in a sibling file)."""
    if node is None:
        return False
    param = _parameter_root(model, node, rebinding=False, depth=0)
    if param is None:
        return False
    fn, name = param
    index = _parameter_index(fn, name)
    values = argument_values(model, fn, index, name) if index is not None else []
    return all(classify(model, v) is not Source.PLAIN for v in values)


def _parameter_index(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> int | None:
    positional = [*fn.args.posonlyargs, *fn.args.args]
    for i, a in enumerate(positional):
        if a.arg == name:
            return i
    return -1 if any(a.arg == name for a in fn.args.kwonlyargs) else None


def _parameter_root(
    model: ScriptModel, node: ast.AST, rebinding: bool, depth: int
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """``(function, parameter)`` when ``node`` reads a parameter (through ``iter``/``islice``
    and rebindings from such calls), else None."""
    node = _unwrap_iter(node)
    if depth > 3:
        return None
    if isinstance(node, ast.Call) and node.args:
        name = model.call_name(node) or ""
        builtin = isinstance(node.func, ast.Name) and node.func.id in PASS_THROUGH
        if name in LOADER_SLICERS or builtin or _is_tqdm(model, node):
            return _parameter_root(model, node.args[0], rebinding, depth + 1)
        return None
    if not isinstance(node, ast.Name):
        return None
    fn = model.enclosing_function(node)
    if fn is None or _parameter_index(fn, node.id) is None:
        return None
    if rebinding:
        return fn, node.id  # the value a rebinding reads: the parameter itself
    stores = [
        n
        for n in model.walk_scope(fn)
        if isinstance(n, ast.Name) and n.id == node.id and isinstance(n.ctx, ast.Store)
    ]
    for store in stores:
        stmt = model.parent(store)
        if not (isinstance(stmt, ast.Assign) and store in stmt.targets):
            return None  # a loop or with target, or unpacking: not the parameter any more
        root = _parameter_root(model, stmt.value, True, depth + 1)
        if root is None or root[1] != node.id:
            return None
    return fn, node.id
