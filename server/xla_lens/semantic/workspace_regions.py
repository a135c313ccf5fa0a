"""The function bodies a workspace class call runs (``workspace_classes.class_call``): the
method, the methods it calls on ``self`` (resolved from the constructed class, so an override
in a subclass is the one that runs), ``super().m()``, functions of the same module it calls,
the ``forward`` of a module held in ``self.<attr>`` and the methods called on it, and methods
called on an object whose class the code names (``semantic/workspace_elements.py``),
``CLOSURE_DEPTH`` deep. Read from disk, never imported or run.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .workspace_calls import ParsedModule, function_in_module, parsed_module
from .workspace_classes import (
    CLOSURE_DEPTH,
    SELF_NAMES,
    ClassCall,
    ClassRef,
    _class_ref,
    chain,
    find_method,
)
from .workspace_elements import receiver_constructor

# (the chain's class nodes, the method node) -> its regions. The nodes of a module come from
# ``parsed_module``'s cache, the same objects while the file is unchanged; held here, so an id
# is never reused for another node.
_regions: dict[tuple[ast.AST, ...], list[tuple[Path, ast.AST]]] = {}
_CACHE_LIMIT = 64


def regions(target: ClassCall) -> list[tuple[Path, ast.AST]]:
    """The bodies ``target`` runs: its method, then what it calls on ``self`` and
    ``super()`` and the functions of the same module it calls, ``CLOSURE_DEPTH`` deep (and
    those of its alternatives)."""
    out = list(_regions_of(target))
    for other in target.alternatives:
        out += [r for r in _regions_of(other) if r not in out]
    return out


def _regions_of(target: ClassCall) -> list[tuple[Path, ast.AST]]:
    key = (*(c.node for c in target.chain), target.method)
    found = _regions.get(key)
    if found is None:
        found = _walk_regions(target)
        if len(_regions) >= _CACHE_LIMIT:
            _regions.clear()
        _regions[key] = found
    return found


def clear_cache() -> None:
    _regions.clear()


def _walk_regions(target: ClassCall) -> list[tuple[Path, ast.AST]]:
    seen: set[int] = {id(target.method)}
    out: list[tuple[Path, ast.AST]] = [(target.owner.path, target.method)]
    frontier: list[_Step] = [
        (target.chain, target.owner, target.owner.module, target.owner.path, target.method)
    ]
    for _ in range(CLOSURE_DEPTH):
        found: list[_Step] = []
        for classes, owner, module, _path, region in frontier:
            for n in ast.walk(region):
                if isinstance(n, ast.Return) and owner is not None:
                    # ``return self.CrossEntropyLoss``: the method handed out runs later, at
                    # the caller's call (deeplab-xception's ``build_loss``, held-out 29).
                    step = _returned_method(classes, n)
                elif isinstance(n, ast.Call):
                    step = _callee(classes, owner, module, region, n)
                else:
                    continue
                if step is None or id(step[4]) in seen:
                    continue
                seen.add(id(step[4]))
                out.append((step[3], step[4]))
                found.append(step)
        frontier = found
    return out


def _held_class(classes: tuple[ClassRef, ...], attr: str) -> ClassRef | None:
    """The workspace class every ``self.<attr> = ...`` of the classes constructs."""
    cls: ClassRef | None = None
    for owner in classes:
        for n in ast.walk(owner.node):
            if not (
                isinstance(n, ast.Assign)
                and any(
                    isinstance(t, ast.Attribute)
                    and t.attr == attr
                    and isinstance(t.value, ast.Name)
                    and t.value.id in SELF_NAMES
                    for t in n.targets
                )
            ):
                continue
            built = (
                _class_ref(owner.module, n.value.func) if isinstance(n.value, ast.Call) else None
            )
            if built is None or (cls is not None and built.node is not cls.node):
                return None  # one library module among them, or two classes: not guessed
            cls = built
    return cls


def _held_module(classes: tuple[ClassRef, ...], attr: str, method: str | None) -> _Step | None:
    """``method`` (None: ``forward`` or ``__call__``, the module called) of the workspace
    class held in ``self.<attr>``."""
    cls = _held_class(classes, attr)
    if cls is None:
        return None
    held = chain(cls)
    if method is None:
        found = find_method(held, "__call__") or find_method(held, "forward")
    else:
        found = find_method(held, method)
    if found is None:
        return None
    return held, found[0], found[0].module, found[0].path, found[1]


def _returned_method(classes: tuple[ClassRef, ...], ret: ast.Return) -> _Step | None:
    value = ret.value
    if not (
        isinstance(value, ast.Attribute)
        and isinstance(value.value, ast.Name)
        and value.value.id in SELF_NAMES
    ):
        return None
    found = find_method(classes, value.attr)
    if found is None:
        return None
    return classes, found[0], found[0].module, found[0].path, found[1]


def _elsewhere(module: ParsedModule, func: ast.expr) -> _Step | None:
    """A class constructed (its ``__init__``, also of the same module) or a function called
    from another workspace module: SPADE's ``Pix2PixTrainer.__init__`` builds ``Pix2PixModel(opt)`` of
    models/pix2pix_model.py, whose ``__init__`` picks ``torch.cuda.FloatTensor`` (held-out 28)."""
    cls = _class_ref(module, func)
    # A class of the same helper module runs its ``__init__`` too (held-out 65's mdistiller:
    # ``CRD.init_crd_modules`` builds ``ContrastMemory(...)`` of CRD.py, whose ``__init__``
    # moves to CUDA); the script's own classes are never named (its own rules read them).
    if cls is not None:
        classes = chain(cls)
        found = find_method(classes, "__init__")
        if found is None:
            return None
        return classes, found[0], found[0].module, found[0].path, found[1]
    target = function_in_module(module, func)
    other = parsed_module(target[0]) if target is not None else None
    fn = other.functions.get(target[1]) if other is not None and target is not None else None
    if fn is None or other is None:
        return None
    return (), None, other, other.path, fn


# (the chain its ``self`` is, the class defining it or None, its module, its file, its body)
_Step = tuple[tuple[ClassRef, ...], ClassRef | None, ParsedModule, Path, ast.AST]


def _callee(
    classes: tuple[ClassRef, ...],
    owner: ClassRef | None,
    module: ParsedModule,
    region: ast.AST,
    call: ast.Call,
) -> _Step | None:
    func = call.func
    if isinstance(func, ast.Name):
        fn = module.functions.get(func.id)
        if fn is not None:
            return (classes, None, module, module.path, fn)
        return _elsewhere(module, func)
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    if not (isinstance(receiver, ast.Name) and receiver.id in SELF_NAMES):
        # ``networks.define_G(opt)``, ``models.Pix2PixModel(opt)``: another module's code.
        found_elsewhere = _elsewhere(module, func)
        if found_elsewhere is not None:
            return found_elsewhere
    if owner is not None and isinstance(receiver, ast.Name) and receiver.id in SELF_NAMES:
        found = find_method(classes, func.attr)  # the override of the constructed class
        if found is None:
            # ``self.Transformation(x)`` with ``self.Transformation = TPS(...)`` in
            # ``__init__``: the held module's ``forward`` runs (held-out 40's OCR Model).
            held = _held_module(classes, func.attr, None)
            if held is not None:
                return held
    elif (
        owner is not None
        and isinstance(receiver, ast.Attribute)
        and isinstance(receiver.value, ast.Name)
        and receiver.value.id in SELF_NAMES
        and (held := _held_module(classes, receiver.attr, func.attr)) is not None
    ):
        return held  # ``self.GridGenerator.build_P_prime(...)``
    elif (
        owner is not None
        and isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Name)
        and receiver.func.id == "super"
    ):
        found = find_method(classes, func.attr, after=owner)
    else:  # ``meter.sync()`` where ``for meter in self.meters.values()``
        own = classes if owner is not None else ()
        ctor = receiver_constructor([(c.node, c.module) for c in own], module, region, receiver)
        cls = _class_ref(ctor[1], ctor[0]) if ctor is not None else None
        if cls is None:
            return None
        classes = chain(cls)
        found = find_method(classes, func.attr)
    if found is None:
        return None
    return classes, found[0], found[0].module, found[0].path, found[1]
