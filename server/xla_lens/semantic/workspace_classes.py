"""Which methods of a workspace class a call of the script runs, found on disk (never
imported or run).

``from trainer import Trainer; t = Trainer(model, cfg); t.train()`` runs ``Trainer.__init__``
and ``Trainer.train`` (or ``BaseTrainer.train`` of ``base/base_trainer.py`` when the class
inherits it), whose bodies are in other files of the project. ``class_call`` says which
class and method a call runs: a constructor (``Trainer(...)``, ``pkg.mod.Trainer(...)``,
re-exported by a package's ``__init__.py`` or not), a method called on a name every
assignment of which constructs that class (``t.train()``; the name called itself,
``criterion(out, y)``, runs ``forward``), and ``self.m()`` in a class of the script whose
bases come from the workspace. ``workspace_regions.regions`` lists the function bodies
the call runs: the method, the methods it calls on ``self`` (resolved from the constructed
class, so an override in a subclass is the one that runs), ``super().m()``, functions of
the same module it calls, and methods called on an object whose class the code names
(``semantic/workspace_elements.py``), ``CLOSURE_DEPTH`` deep. Modules are read through
``workspace_calls.parsed_module`` (cached per file, size and mtime).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .bound_values import bound_values, tuple_assignments
from .node_helpers import dotted
from .workspace import module_file
from .workspace_calls import (
    ParsedModule,
    _bindings,
    _index,
    _is_library,
    class_in_module,
    parsed_module,
)

if TYPE_CHECKING:
    from .model import ScriptModel

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# Base classes followed above the constructed class (Trainer -> BaseTrainer -> ...).
MAX_BASE_DEPTH = 3
MAX_CHAIN = 8
# Calls followed from the called method (train -> _train_epoch -> _save_checkpoint).
CLOSURE_DEPTH = 2
SELF_NAMES = frozenset({"self", "cls"})


@dataclass(frozen=True, eq=False)
class ClassRef:
    path: Path  # the file that defines it (the script's own path for a class of the script)
    node: ast.ClassDef
    module: ParsedModule

    @property
    def name(self) -> str:
        return self.node.name


@dataclass(frozen=True)
class ClassCall:
    chain: tuple[ClassRef, ...]  # the constructed class, then its workspace bases (MRO-ish)
    owner: ClassRef  # the class that defines the method run
    method: FunctionNode
    shown: str  # how the script names the call: ``Trainer``, ``trainer.train``
    # The same call on the other classes the receiver may be (``converter`` built as one of
    # three label converters in an if/else): their methods run instead.
    alternatives: tuple[ClassCall, ...] = ()


def script_module(model: ScriptModel) -> ParsedModule:
    """The script itself as a module (its text as analysed, not as saved), every import
    of it bound (also those inside functions and ``try``)."""

    def build() -> ParsedModule:
        module = _index(Path(model.path), model.source, model.tree)  # type: ignore[arg-type]
        bindings = model.memo(("workspace_calls", "bindings"), lambda: _bindings(model))
        for local, (source, level, imported) in bindings.items():
            if local in module.classes:
                continue
            if imported is None:
                module.imports[local] = source
            else:
                module.reexports[local] = (source, level, imported)
        return module

    return model.memo(("workspace_classes", "module"), build)


def _class_ref(module: ParsedModule, expr: ast.expr) -> ClassRef | None:
    if isinstance(expr, ast.Name) and expr.id in module.classes:
        return ClassRef(module.path, module.classes[expr.id], module)
    found = class_in_module(module, expr)
    if found is None:
        return None
    other = parsed_module(found[0])
    if other is None or found[1] not in other.classes:
        return None
    return ClassRef(found[0], other.classes[found[1]], other)


def class_reference(module: ParsedModule, expr: ast.expr) -> ClassRef | None:
    """The workspace class ``expr`` names in ``module``, or None."""
    return _class_ref(module, expr)


def chain(cls: ClassRef) -> tuple[ClassRef, ...]:
    """``cls`` and the bases it inherits from, depth first, left to right (Python's MRO
    for the single and simple multiple inheritance training code uses), workspace classes
    only: a library base (``nn.Module``) ends its branch."""
    out: list[ClassRef] = []

    def visit(c: ClassRef, depth: int) -> None:
        if len(out) >= MAX_CHAIN or any(o.node is c.node for o in out):
            return
        out.append(c)
        if depth >= MAX_BASE_DEPTH:
            return
        for base in c.node.bases:
            found = _class_ref(c.module, base)
            if found is not None:
                visit(found, depth + 1)

    visit(cls, 0)
    return tuple(out)


def find_method(
    classes: tuple[ClassRef, ...], name: str, after: ClassRef | None = None
) -> tuple[ClassRef, FunctionNode] | None:
    """The first class of ``classes`` (past ``after``: ``super()``) defining ``name``."""
    start = 0
    if after is not None:
        start = next((i + 1 for i, c in enumerate(classes) if c.node is after.node), len(classes))
    for c in classes[start:]:
        for stmt in c.node.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                return c, stmt
    return None


def _script_class(model: ScriptModel, expr: ast.expr) -> ClassRef | None:
    """The class a constructor call's callee names, when it or a base is in the workspace
    (a class of the script with only library bases is the script's own business)."""
    cls = _class_ref(script_module(model), expr)
    if cls is None:
        return None
    if cls.path == Path(model.path) and len(chain(cls)) < 2:
        return None
    return cls


def _constructed(model: ScriptModel, call: ast.Call) -> ClassRef | None:
    name = dotted(call.func)
    if name is None:
        return None
    memo: dict[str, ClassRef | None] = model.memo(("workspace_classes", "constructed"), dict)
    if name not in memo:
        memo[name] = _script_class(model, call.func)
    return memo[name]


def built(model: ScriptModel, call: ast.Call) -> tuple[ClassRef, ...]:
    """The workspace classes ``call`` builds: a constructor, also moved as it is built
    (``Net(cfg).to(device)``), or a factory (``semantic/workspace_factories.py``)."""
    from .workspace_factories import built_classes, unwrapped  # noqa: PLC0415 (imports this)

    inner = unwrapped(call)
    cls = _constructed(model, inner)
    if cls is not None:
        return (cls,)
    # ``registry[kind](...)`` may build another class at each call (the ``if kind == ...``
    # around it picks the key): such calls are not shared by their text.
    key: str | tuple[str, int] = ast.unparse(inner.func)
    if isinstance(inner.func, ast.Subscript):
        key = (key, id(inner))
    memo: dict[object, tuple[ClassRef, ...]] = model.memo(("workspace_classes", "built"), dict)
    if key not in memo:
        memo[key] = built_classes(script_module(model), inner)
    return memo[key]


def _instance_classes(model: ScriptModel, name: str) -> tuple[ClassRef, ...]:
    """The workspace classes the assignments of ``name`` construct, when every one of them
    constructs one (in the order first seen); () otherwise."""
    memo: dict[str, tuple[ClassRef, ...]] = model.memo(("workspace_classes", "any of"), dict)
    if name not in memo:
        found: list[ClassRef] = []
        for value in bound_values(model, name):
            if _rewraps(value, name):
                continue  # ``model = nn.DataParallel(model).to(device)``: the same module
            classes = built(model, value) if isinstance(value, ast.Call) else ()
            if not classes:
                found = []
                break
            found += [c for c in classes if all(f.node is not c.node for f in found)]
        memo[name] = tuple(found)
    return memo[name]


# Wrappers whose call runs the wrapped module's ``forward``, and methods that return the
# module itself.
MODULE_WRAPPERS = frozenset({"DataParallel", "DistributedDataParallel", "DDP"})
SELF_RETURNING = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "train", "eval"})
# Checkpoint helpers handed the module that give it back loaded (PointFlow's ``model,
# optimizer, start_epoch = resume(path, model, optimizer)``, held-out 162).
RETURNING_HELPERS = frozenset({"resume", "load_checkpoint", "resume_checkpoint", "load_model"})


def instance_classes(model: ScriptModel, name: str) -> tuple[ClassRef, ...]:
    """The workspace classes every assignment of ``name`` constructs (() otherwise)."""
    return _instance_classes(model, name)


def _rewraps(value: ast.expr, name: str) -> bool:
    """``name`` itself, moved or wrapped: ``nn.DataParallel(model).to(device)``,
    ``model.cuda()``."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in SELF_RETURNING
    ):
        value = value.func.value
    if isinstance(value, ast.Call):
        func = value.func
        callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if callee in RETURNING_HELPERS and any(
            isinstance(a, ast.Name) and a.id == name for a in value.args
        ):
            return True
        if callee not in MODULE_WRAPPERS or not value.args:
            return False
        value = value.args[0]
    return isinstance(value, ast.Name) and value.id == name


def _instance_class(model: ScriptModel, name: str) -> ClassRef | None:
    """The workspace class every assignment of ``name`` in the script constructs."""
    memo: dict[str, ClassRef | None] = model.memo(("workspace_classes", "instances"), dict)
    if name not in memo:
        found: ClassRef | None = None
        values = bound_values(model, name)
        for value in values:
            cls = _constructed(model, value) if isinstance(value, ast.Call) else None
            if cls is None or (found is not None and cls.node is not found.node):
                found = None
                break
            found = cls
        memo[name] = found
    return memo[name]


def call_root(node: ast.expr) -> str | None:
    """``a`` of ``a.b.c``, of ``a.B(...).m``, of ``a.__dict__[k]`` and ``getattr(a, k)``
    (and of ``(a.module if n > 1 else a).m``)."""
    while isinstance(node, _CHAINS) or isinstance(node, ast.IfExp):
        if isinstance(node, ast.IfExp):
            chosen = _unwrapped_choice(node)
            if chosen is node:
                break
            node = chosen
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and node.args
        ):
            node = node.args[0]
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            node = node.value  # type: ignore[union-attr]
    return node.id if isinstance(node, ast.Name) else None


_CHAINS = (ast.Attribute, ast.Call, ast.Subscript)


def class_roots(model: ScriptModel) -> frozenset[str]:
    """The names a call's callee must start with to reach a workspace class: bound by an
    import of a workspace module, a class of the script deriving from one, ``self`` in
    such a class, or a name assigned from a call of one of those. Asked of every call, so
    the rest (reading modules) is for the few calls that pass."""
    return model.memo(("workspace_classes", "roots"), lambda: _roots(model))


def _roots(model: ScriptModel) -> frozenset[str]:
    found: dict[tuple[str, int], bool] = {}

    def in_workspace(source: str, level: int) -> bool:
        key = (source, level)
        if key not in found:  # one look on disk per imported module, not per call
            found[key] = not _is_library(source, level) and (
                module_file(model.path, source, level) is not None
            )
        return found[key]

    bindings = model.memo(("workspace_calls", "bindings"), lambda: _bindings(model))
    # ``from models import mar`` binds a module of the workspace even where ``models`` is a
    # folder without ``__init__.py`` (LTH14 mar, held-out 44).
    bound = {
        n
        for n, (src, lvl, imported) in bindings.items()
        if in_workspace(src, lvl)
        or (imported is not None and in_workspace(f"{src}.{imported}" if src else imported, lvl))
    }
    bound |= _star_imported(model, in_workspace)
    if not bound:
        return frozenset()  # a script of library imports only: the usual case
    module = script_module(model)
    local: set[str] = set()
    for _ in range(MAX_BASE_DEPTH):  # ``class B(A)`` where ``class A(Imported)``
        local |= {
            n
            for n, c in module.classes.items()
            if any(call_root(b) in bound or call_root(b) in local for b in c.bases)
        }
    ctor = bound | local
    out = set(ctor) | (SELF_NAMES | {"super"} if local else set())
    if any(
        isinstance(t, ast.Attribute)
        and isinstance(t.value, ast.Name)
        and t.value.id in SELF_NAMES
        and isinstance(a.value, ast.Call)
        and call_root(a.value.func) in ctor
        for a in model.nodes_of(ast.Assign)
        for t in a.targets  # type: ignore[attr-defined]
    ):
        out |= SELF_NAMES  # ``self.saver = Saver(args)``: ``self.saver.m()`` may reach it
    elif any(
        a.annotation is not None and _annotation_root(a.annotation) in ctor
        for fn in model.nodes_of(ast.FunctionDef)
        for a in fn.args.args  # type: ignore[attr-defined]
    ):
        out |= SELF_NAMES  # ``__init__(self, exp: Exp)``: ``self.exp.m()`` may reach it
    for name in {*model.assignments, *tuple_assignments(model)}:
        if any(
            isinstance(v, ast.Call) and call_root(v.func) in ctor for v in bound_values(model, name)
        ):
            out.add(name)
    return frozenset(out)


def _star_imported(model: ScriptModel, in_workspace: Callable[[str, int], bool]) -> set[str]:
    """The names a ``from module import *`` of a workspace module binds: its functions, its
    classes and what it imports from the workspace itself (EfficientConformer's main.py takes
    ``create_model`` from ``from functions import *``, held-out 116)."""
    names: set[str] = set()
    for imp in model.import_nodes:
        if not (isinstance(imp, ast.ImportFrom) and any(a.name == "*" for a in imp.names)):
            continue
        source, level = imp.module or "", imp.level
        if not in_workspace(source, level):
            continue
        path = module_file(model.path, source, level)
        other = parsed_module(path) if path is not None else None
        if other is None:
            continue
        names |= set(other.functions) | set(other.classes)
        names |= {n for n, (src, lvl, _) in other.reexports.items() if not _is_library(src, lvl)}
    return names


def _annotation_root(annotation: ast.expr) -> str | None:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.split(".")[0].split("[")[0].strip() or None
    return call_root(annotation)


def class_call(model: ScriptModel, call: ast.Call) -> ClassCall | None:
    """The workspace class and method ``call`` runs (see the module's docstring), or None."""
    if not model.path or model.path.startswith("<"):
        return None
    func = call.func
    if isinstance(func, ast.Attribute) and _is_super(model, call, func.value):
        # ``super().__init__(args)`` in the script's subclass of a workspace class: the
        # base's method runs (Informer2020's Exp_Basic picks the device, held-out 39).
        own = _enclosing_class(model, call)
        classes = chain(own) if own is not None else ()
        found = find_method(classes, func.attr, after=own)
        if own is None or found is None or found[0].path == own.path:
            return None  # the script's own base: its own rules read it
        return ClassCall(classes, found[0], found[1], f"super().{func.attr}")
    alias = _bound_method(model, func)
    if alias is not None:
        return alias
    if call_root(func) not in class_roots(model):
        return None
    cls = _constructed(model, call)
    if cls is not None:  # ``Trainer(...)``: its ``__init__`` (or an inherited one)
        return _target(chain(cls), "__init__", dotted(func) or cls.name)
    classes = built(model, call) if call is unwrapped_call(call) else ()
    if classes:  # a factory: ``mar.__dict__[args.model](...)``, ``resnet18(...)``
        shown = dotted(func) or ast.unparse(func)
        inits = [_target(chain(c), "__init__", shown) for c in classes]
        if None in inits:
            return None
        return replace(inits[0], alternatives=tuple(inits[1:]))  # type: ignore[arg-type]
    if isinstance(func, ast.Name) and func.id not in SELF_NAMES:
        # ``criterion(out, targets)`` with ``criterion = MultiBoxLoss(...)``: calling a module
        # runs its ``forward`` (held-out 24, ssd.pytorch's loss in layers/modules).
        # A class of its own with ``__call__`` runs that: Informer2020's EarlyStopping saves
        # the checkpoint (held-out 39).
        calls = []
        for cls in _instance_classes(model, func.id):
            classes = chain(cls)
            method = "__call__" if find_method(classes, "__call__") is not None else "forward"
            calls.append(_target(classes, method, f"{func.id}"))
        if not calls or None in calls:
            return None
        return replace(calls[0], alternatives=tuple(calls[1:]))  # type: ignore[arg-type]
    if not isinstance(func, ast.Attribute):
        return None
    receiver = _unwrapped_choice(func.value)
    shown = f"{dotted(receiver) or '...'}.{func.attr}"
    if isinstance(receiver, ast.Call):  # ``Trainer(...).train()``
        cls = _constructed(model, receiver)
        shown = f"{dotted(receiver.func)}(...).{func.attr}"
    elif isinstance(receiver, ast.Name) and receiver.id in SELF_NAMES:
        cls = _enclosing_class(model, call)
        found = _target(chain(cls), func.attr, shown) if cls is not None else None
        # A method of the script itself: its own rules read it.
        return found if found is not None and found.owner.path != cls.path else None  # type: ignore[union-attr]
    elif isinstance(receiver, ast.Name):  # ``t = Trainer(...)`` then ``t.train()``
        classes = _instance_classes(model, receiver.id) or _reaching_classes(model, receiver)
        calls = [c for c in (_target(chain(k), func.attr, shown) for k in classes) if c]
        if len(calls) != len(classes) or not calls:
            return None  # one of them lacks the method: not this call's class
        return replace(calls[0], alternatives=tuple(calls[1:]))
    elif (
        isinstance(receiver, ast.Attribute)
        and isinstance(receiver.value, ast.Name)
        and receiver.value.id in SELF_NAMES
    ):  # ``self.saver.save_checkpoint(...)`` with ``self.saver = Saver(args)``
        cls = _attribute_class(model, call, receiver.attr)
    return _target(chain(cls), func.attr, shown) if cls is not None else None


def _unwrapped_choice(receiver: ast.expr) -> ast.expr:
    """``(model.module if n_gpu > 1 else model)`` (Tacotron2, held-out 97): the wrapped module
    or the module itself, the same object's class either way; else ``receiver``."""
    if not isinstance(receiver, ast.IfExp):
        return receiver
    names = []
    for side in (receiver.body, receiver.orelse):
        if isinstance(side, ast.Attribute) and side.attr == "module":
            side = side.value
        names.append(side.id if isinstance(side, ast.Name) else None)
    if names[0] is None or names[0] != names[1]:
        return receiver
    for side in (receiver.body, receiver.orelse):
        if isinstance(side, ast.Name):
            return side
    return receiver.body.value  # type: ignore[attr-defined]  # both ``m.module``


def _reaching_classes(model: ScriptModel, name: ast.Name) -> tuple[ClassRef, ...]:
    """The workspace class of the one binding of ``name`` that reaches this read: SRGAN's
    ``generator = Generator(...)`` then ``generator.initialize_with_srresnet(...)`` in the
    same branch, while the other branch loads ``generator`` from a checkpoint (held-out 95)."""
    from .reaching import binds_whole, bound_value, walk_back  # noqa: PLC0415 (imports us)

    found = walk_back(model, name, name.id, lambda s: binds_whole(s, name.id))
    if found is None or found[0] is None or found[1]:
        return ()
    value = bound_value(found[0], name.id)
    return built(model, value) if isinstance(value, ast.Call) else ()


def reaching_classes(model: ScriptModel, name: ast.Name) -> tuple[ClassRef, ...]:
    """The workspace classes of the one binding of ``name`` that reaches this read."""
    return _reaching_classes(model, name)


def bound_method_root(model: ScriptModel, func: ast.expr) -> str | None:
    """``model`` for a call of ``trainer`` after ``trainer = model.train`` (bound once)."""
    if not isinstance(func, ast.Name):
        return None
    values = model.assigned_from(func.id)
    if len(values) == 1 and isinstance(values[0], ast.Attribute):
        return call_root(values[0])
    return None


def _bound_method(model: ScriptModel, func: ast.expr) -> ClassCall | None:
    """``trainer = model.train`` then ``trainer(args)`` (FixMatch's main, held-out 91): the
    call runs the method of the instance's workspace class, as ``model.train(args)`` would.
    Only a name bound once, to a method of a name whose classes all have it."""
    if not isinstance(func, ast.Name) or func.id in SELF_NAMES:
        return None
    values = model.assigned_from(func.id)
    if len(values) != 1:
        return None
    (bound,) = values
    if not (isinstance(bound, ast.Attribute) and isinstance(bound.value, ast.Name)):
        return None
    if bound.value.id in SELF_NAMES or call_root(bound) not in class_roots(model):
        return None
    classes = _instance_classes(model, bound.value.id)
    shown = func.id  # "run() (Trainer.train) runs code in ..."
    calls = [c for c in (_target(chain(k), bound.attr, shown) for k in classes) if c]
    if len(calls) != len(classes) or not calls:
        return None
    return replace(calls[0], alternatives=tuple(calls[1:]))


def unwrapped_call(call: ast.Call) -> ast.Call:
    from .workspace_factories import unwrapped  # noqa: PLC0415 (imports this)

    return unwrapped(call)


def _is_super(model: ScriptModel, call: ast.Call, receiver: ast.expr) -> bool:
    """``super()`` or ``super(<the enclosing class>, self)``."""
    if not (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Name)
        and receiver.func.id == "super"
    ):
        return False
    if not receiver.args:
        return True
    first = receiver.args[0]
    owner = next((a for a in model.ancestors(call) if isinstance(a, ast.ClassDef)), None)
    return owner is not None and isinstance(first, ast.Name) and first.id == owner.name


def _attribute_class(model: ScriptModel, node: ast.AST, attr: str) -> ClassRef | None:
    """The workspace class every ``self.<attr> = ...`` of the class around ``node``
    constructs (deeplab-xception's ``self.saver = Saver(args)``, held-out 29)."""
    owner = next((a for a in model.ancestors(node) if isinstance(a, ast.ClassDef)), None)
    if owner is None:
        return None
    found: ClassRef | None = None
    for n in ast.walk(owner):
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            if (
                isinstance(t, ast.Attribute)
                and t.attr == attr
                and isinstance(t.value, ast.Name)
                and t.value.id in SELF_NAMES
            ):
                if isinstance(n.value, ast.Call):
                    cls = _constructed(model, n.value)
                else:
                    cls = _annotated_class(model, n, n.value)
                if cls is None or (found is not None and cls.node is not found.node):
                    return None
                found = cls
    return found


def _annotated_class(model: ScriptModel, stmt: ast.AST, value: ast.expr) -> ClassRef | None:
    """``self.exp = exp`` in ``__init__(self, exp: Exp)``: the workspace class the parameter's
    annotation names (held-out 57's YOLOX trainer; a subclass may override what it runs)."""
    if not isinstance(value, ast.Name):
        return None
    fn = model.enclosing_function(stmt)
    if fn is None:
        return None
    args = fn.args
    param = next(
        (a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg == value.id), None
    )
    annotation = param.annotation if param is not None else None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if not isinstance(annotation, ast.Name | ast.Attribute):
        return None
    return _class_ref(script_module(model), annotation)


def _target(classes: tuple[ClassRef, ...], method: str, shown: str) -> ClassCall | None:
    found = find_method(classes, method)
    return ClassCall(classes, found[0], found[1], shown) if found is not None else None


def _enclosing_class(model: ScriptModel, node: ast.AST) -> ClassRef | None:
    for a in model.ancestors(node):
        if isinstance(a, ast.ClassDef):
            module = script_module(model)
            if module.classes.get(a.name) is not a:
                return None  # a nested class: out of scope
            cls = ClassRef(module.path, a, module)
            return cls if len(chain(cls)) >= 2 else None
    return None


def clear_cache() -> None:
    """Forget the regions of every class call (``workspace_regions``' cache)."""
    from .workspace_regions import clear_cache as clear_regions  # noqa: PLC0415

    clear_regions()
