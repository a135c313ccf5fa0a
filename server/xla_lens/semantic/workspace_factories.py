"""Which workspace classes a call builds when it does not name the class itself: a model moved
as it is built (``Net(cfg).to(device)``), a factory function of a workspace module
(``mar_base(**kw)`` returning ``MAR(...)``), and a model chosen by name from a module
(``mar.__dict__[args.model](...)``, ``getattr(models, args.arch)(...)``: any of the module's
factories). Read from disk, never imported or run.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from .node_helpers import dotted
from .workspace import module_file
from .workspace_calls import ParsedModule, _is_library, function_in_module, parsed_module
from .workspace_classes import (
    SELF_RETURNING,
    ClassCall,
    ClassRef,
    chain,
    class_reference,
    find_method,
)

# A model picked by name from a module with more candidates than this is anyone's guess.
MAX_CANDIDATES = 4


def unwrapped(call: ast.Call) -> ast.Call:
    """``Net(cfg)`` of ``Net(cfg).to(device).eval()``."""
    while (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in SELF_RETURNING
        and isinstance(call.func.value, ast.Call)
    ):
        call = call.func.value
    return call


def built_classes(module: ParsedModule, call: ast.Call) -> tuple[ClassRef, ...]:
    """The workspace classes ``call`` (in ``module``, unwrapped) builds through a factory:
    a function of another workspace module every return of which constructs a class, or
    a name looked up in a workspace module (``mod.__dict__[name]``, ``getattr(mod, name)``)."""
    func = call.func
    picked = _picked_module(module, func)
    if picked is not None:
        return _module_factories(picked)
    registered = _registry_classes(module, call)
    if registered is not None:
        return registered
    found = function_in_module(module, func)
    if found is None:
        return ()
    other = parsed_module(found[0])
    node = other.functions.get(found[1]) if other is not None else None
    if other is None or node is None:
        return ()
    return _returned_classes(other, node)


def _picked_module(module: ParsedModule, func: ast.expr) -> ParsedModule | None:
    """The module of ``mod.__dict__[...]`` / ``getattr(mod, ...)``, when it is a workspace
    module."""
    if (
        isinstance(func, ast.Subscript)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "__dict__"
    ):
        target = func.value.value
    elif (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) == 2
        and not (isinstance(func.args[1], ast.Constant))
    ):
        target = func.args[0]
    else:
        return None
    name = dotted(target)
    if name is None:
        return None
    path = _module_path(module, name)
    return parsed_module(path) if path is not None else None


def _registry_classes(module: ParsedModule, call: ast.Call) -> tuple[ClassRef, ...] | None:
    """``distiller_dict[cfg.TYPE](...)`` where ``distiller_dict`` is a dict of classes a
    workspace module defines (held-out 65's mdistiller: ``{"KD": KD, "CRD": CRD, ...}`` in
    ``distillers/__init__.py``): the class of the key when it is known (a constant, or the
    constant of an ``if key == "CRD":`` around the call), else the dict's classes when few
    enough to name; None when ``call`` is no such lookup."""
    func = call.func
    if not isinstance(func, ast.Subscript):
        return None
    table_ref = func.value
    if isinstance(table_ref, ast.Name):
        bound = module.reexports.get(table_ref.id)
    elif (
        isinstance(table_ref, ast.Attribute)
        and isinstance(table_ref.value, ast.Name)
        and table_ref.value.id in module.imports
    ):
        # ``models.REGISTERED_MODELS[args.problem](...)`` after ``import models``
        # (simclr-pytorch, held-out 102): the dict of the package's ``__init__``.
        bound = (module.imports[table_ref.value.id], 0, table_ref.attr)
    else:
        return None
    if bound is None:
        return None
    source, level, original = bound
    if _is_library(source, level):
        return None
    path = module_file(str(module.path), source, level)
    other = parsed_module(path) if path is not None else None
    table = _dict_literal(other, original) if other is not None else None
    if other is None or table is None:
        return None
    key = _known_key(module, call, func.slice)
    entries = [
        v
        for k, v in zip(table.keys, table.values, strict=True)
        if key is None or (isinstance(k, ast.Constant) and k.value == key)
    ]
    # ``{"KD": KD}`` or ``{'sim-clr': ssl.SimCLR}`` (a class of a submodule it imports).
    classes = [
        class_reference(other, v) for v in entries if isinstance(v, ast.Name | ast.Attribute)
    ]
    if not classes or None in classes or len(classes) > MAX_CANDIDATES:
        return ()
    return tuple(c for c in classes if c is not None)


def _dict_literal(module: ParsedModule, name: str) -> ast.Dict | None:
    found = None
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in stmt.targets
        ):
            found = stmt.value if isinstance(stmt.value, ast.Dict) else None
    return found


def _known_key(module: ParsedModule, call: ast.Call, key: ast.expr) -> object | None:
    """The constant ``key`` is: itself, or what the ``if`` holding ``call`` in its body
    compares it to (``if cfg.TYPE == "CRD":``)."""
    if isinstance(key, ast.Constant):
        return key.value
    wanted = ast.dump(key)
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.If):
            continue
        test = node.test
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and ast.dump(test.left) == wanted
            and isinstance(test.comparators[0], ast.Constant)
        ):
            continue
        if any(n is call for stmt in node.body for n in ast.walk(stmt)):
            return test.comparators[0].value
    return None


def _module_path(module: ParsedModule, name: str) -> Path | None:
    root, _, rest = name.partition(".")
    if root in module.imports:
        full, level = ".".join(p for p in (module.imports[root], rest) if p), 0
    elif root in module.reexports:
        source, level, original = module.reexports[root]
        full = ".".join(p for p in (source, original, rest) if p)
    else:
        return None
    if _is_library(full, level):
        return None
    path = module_file(str(module.path), full, level)
    return None if path is None or path == module.path else path


def _module_factories(module: ParsedModule) -> tuple[ClassRef, ...]:
    """The classes the module's factory functions build, or (none of those) its classes that
    define ``forward``; () when there are more than a guess can cover."""
    found: list[ClassRef] = []
    for node in module.functions.values():
        cls = _returned_class(module, node)
        if cls is not None and all(c.node is not cls.node for c in found):
            found.append(cls)
    if not found:
        found = [
            ClassRef(module.path, c, module)
            for c in module.classes.values()
            if any(isinstance(s, ast.FunctionDef) and s.name == "forward" for s in c.body)
        ]
    return tuple(found) if 0 < len(found) <= MAX_CANDIDATES else ()


def _returned_class(
    module: ParsedModule, node: ast.FunctionDef | ast.AsyncFunctionDef
) -> ClassRef | None:
    """The one workspace class every ``return`` of ``node`` constructs (directly, or through
    a local name assigned once from the constructor), or None."""
    assigned: dict[str, list[ast.expr]] = {}
    returns: list[ast.expr | None] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            assigned.setdefault(n.targets[0].id, []).append(n.value)
        elif isinstance(n, ast.Return):
            returns.append(n.value)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and n is not node:
            return None  # a nested function's returns are not this one's
    found: ClassRef | None = None
    for value in returns:
        if isinstance(value, ast.Name) and len(assigned.get(value.id, ())) == 1:
            value = assigned[value.id][0]
        if not isinstance(value, ast.Call):
            return None
        cls = class_reference(module, unwrapped(value).func)
        if cls is None or (found is not None and cls.node is not found.node):
            return None
        found = cls
    return found


def _returned_classes(
    module: ParsedModule, node: ast.FunctionDef | ast.AsyncFunctionDef
) -> tuple[ClassRef, ...]:
    """The workspace classes the returns of ``node`` construct, when every return constructs
    one: directly, or through a local name every binding of which does
    (EfficientConformer's ``create_model(config)``: ``model = Transducer(...)`` /
    ``ModelCTC(...)`` / ... by the config, then ``return model``; held-out 116); () otherwise
    or past ``MAX_CANDIDATES``."""
    assigned: dict[str, list[ast.expr]] = {}
    stores: dict[str, int] = {}
    returns: list[ast.expr | None] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            assigned.setdefault(n.targets[0].id, []).append(n.value)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, ast.Return):
            returns.append(n.value)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and n is not node:
            return ()  # a nested function's returns are not this one's
        elif isinstance(n, ast.Global | ast.Nonlocal):
            return ()
    found: list[ClassRef] = []
    for value in returns:
        values: list[ast.expr | None] = [value]
        if isinstance(value, ast.Name):
            values = list(assigned.get(value.id, ()))
            # Every binding is a plain ``name = ...``: no loop target, ``with ... as``, tuple.
            if not values or stores.get(value.id, 0) != len(values):
                return ()
        for v in values:
            if not isinstance(v, ast.Call):
                return ()
            cls = class_reference(module, unwrapped(v).func)
            if cls is None:
                return ()
            if all(c.node is not cls.node for c in found):
                found.append(cls)
    if len(found) > 1 and _device_switch(node):
        return ()  # ``XLATrainer`` or ``CUDATrainer`` by ``flags.device``: the device decides
    return tuple(found) if 0 < len(found) <= MAX_CANDIDATES else ()


DEVICE_WORDS = ("cuda", "xla", "tpu", "gpu", "device", "neuron", "accelerator")


def _device_switch(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A test of ``node`` names a device (``flags.device == "xla"``, ``torch.cuda.is_available()``,
    ``if use_tpu``): which class it builds follows the device, and the classes of the other
    devices are not code this device runs (MLPerf UNet3D's ``get_trainer``, held-out 110)."""
    for n in ast.walk(node):
        test = getattr(n, "test", None) if isinstance(n, ast.If | ast.IfExp | ast.While) else None
        if test is None:
            continue
        for part in ast.walk(test):
            word = (
                part.value
                if isinstance(part, ast.Constant) and isinstance(part.value, str)
                else part.id
                if isinstance(part, ast.Name)
                else part.attr
                if isinstance(part, ast.Attribute)
                else ""
            )
            if any(w in word.lower() for w in DEVICE_WORDS):
                return True
    return False


def forward_of(construction: ClassCall) -> ClassCall | None:
    """What calling the built model runs (``forward``, for each class it may be), for a
    constructor call; None for a class without one."""
    found = []
    for call in (construction, *construction.alternatives):
        method = find_method(call.chain, "forward")
        if method is None:
            return None
        found.append(ClassCall(call.chain, method[0], method[1], call.shown))
    return replace(found[0], alternatives=tuple(found[1:])) if found else None


# Block classes followed from one built model: a file of blocks, not of every architecture.
MAX_BLOCKS = 6


def block_forwards(construction: ClassCall) -> list[ClassCall]:
    """The ``forward`` of each class of the built model's own module that its class body
    names (PyramidNet's ``block = Bottleneck`` / ``BasicBlock``, whose forwards build
    ``torch.cuda.FloatTensor`` padding: held-out 62's CutMix): the model's forward runs them
    through its layers."""
    built = construction.chain[0]
    own = {id(c.node) for c in construction.chain}  # its bases' forwards are its own
    names = {
        n.id
        for stmt in built.node.body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id != built.name
    }
    out: list[ClassCall] = []
    for name in sorted(names):
        node = built.module.classes.get(name)
        if node is None or id(node) in own:
            continue
        ref = ClassRef(built.path, node, built.module)
        method = find_method(chain(ref), "forward")
        if method is not None and method[0].path == built.path:
            out.append(ClassCall(chain(ref), method[0], method[1], construction.shown))
        if len(out) >= MAX_BLOCKS:
            break
    return out
