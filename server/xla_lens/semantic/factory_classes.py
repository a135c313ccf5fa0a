"""Classes a workspace factory function may return: ``model = define_Model(opt)`` where
``define_Model`` imports one of several model classes by an option and returns an instance
(``if opt["model"] == "plain": from models.model_plain import ModelPlain as M`` ...
``m = M(opt)``, ``return m``: KAIR, held-out 31; CycleGAN's ``create_model(opt)`` is the same
idiom). The training loop then calls ``model.optimize_parameters()``, whose optimizer step is
in the class's file: each class the factory may return is a candidate, as a name bound in
if/elif branches to different classes is (``wrapped_steps.workspace_steps``).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from .workspace import module_file
from .workspace_calls import helper_target, parsed_module

if TYPE_CHECKING:
    from .model import ScriptModel
    from .workspace_classes import ClassRef

MAX_CLASSES = 12


def factory_classes(model: ScriptModel, call: ast.Call) -> list[ClassRef]:
    """The workspace classes whose instances the workspace function ``call`` runs may
    return (empty when a return is anything else: then nothing is known)."""
    memo: dict[int, list[ClassRef]] = model.memo(("factory_classes", "calls"), dict)
    if id(call) not in memo:
        memo[id(call)] = _factory_classes(model, call)
    return memo[id(call)]


def _factory_classes(model: ScriptModel, call: ast.Call) -> list[ClassRef]:
    from .workspace_classes import class_reference

    target = helper_target(model, call)
    module = parsed_module(target.path) if target is not None else None
    fn = module.functions.get(target.function) if module is not None and target else None
    if fn is None or module is None:
        return []
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if not returns:
        return []
    out: list[ClassRef] = []
    for ret in returns:
        constructors = _constructors(fn, ret.value)
        if not constructors:
            return []
        for ctor in constructors:
            refs = _local_imports(module.path, fn, ctor)
            if not refs:
                ref = class_reference(module, ctor)
                refs = [ref] if ref is not None else []
            if not refs:
                return []
            out.extend(r for r in refs if all(r.node is not o.node for o in out))
    return out[:MAX_CLASSES]


def _constructors(fn: ast.AST, value: ast.expr | None) -> list[ast.expr]:
    """The callees of ``X(...)`` a return gives: directly, or through a name the function
    binds only to such calls."""
    if isinstance(value, ast.Call):
        return [value.func]
    if not isinstance(value, ast.Name):
        return []
    found: list[ast.expr] = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == value.id for t in n.targets
        ):
            if not isinstance(n.value, ast.Call):
                return []
            found.append(n.value.func)
        elif isinstance(n, ast.AugAssign | ast.AnnAssign | ast.For | ast.With) and any(
            isinstance(t, ast.Name) and t.id == value.id
            for t in ast.walk(getattr(n, "target", None) or n)
            if t is not n
        ):
            return []
    return found


def _local_imports(path: Path, fn: ast.AST, ctor: ast.expr) -> list[ClassRef]:
    """Classes ``ctor`` names through ``from module import Class [as ctor]`` statements
    inside ``fn`` (one per branch)."""
    from .workspace_classes import ClassRef

    if not isinstance(ctor, ast.Name):
        return []
    out: list[ClassRef] = []
    for n in ast.walk(fn):
        if not isinstance(n, ast.ImportFrom) or not n.module and not n.level:
            continue
        for alias in n.names:
            if (alias.asname or alias.name) != ctor.id:
                continue
            file = module_file(str(path), n.module or "", n.level)
            parsed = parsed_module(file) if file is not None else None
            cls = parsed.classes.get(alias.name) if parsed is not None else None
            if cls is None:
                return []  # one branch imports what cannot be seen: nothing is known
            out.append(ClassRef(parsed.path, cls, parsed))  # type: ignore[union-attr]
    return out


__all__ = ["factory_classes"]
