"""``x.cuda()`` where ``x`` is an instance of a class of this script that defines its own
``cuda()`` (held-out 65's mdistiller CRD: ``self.multinomial = AliasMethod(probs);
self.multinomial.cuda()``, where ``AliasMethod`` is a plain object whose ``cuda()`` moves its
tensors). That call runs the script's method, not torch's: ``.to(device)`` would raise
AttributeError on it. The method's own moves are reported (and fixed) inside it, after which
the call moves to the XLA device as it is.

The same for a class of a workspace module (held-out 76's Fourier neural operator: ``from
utilities3 import *`` and ``y_normalizer = UnitGaussianNormalizer(y_train)``, whose ``cuda()``
moves its ``mean``/``std``; ``y_normalizer.to(...)`` raised AttributeError).
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel


def own_cuda_method(
    model: ScriptModel, recv: ast.expr
) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """(class name, its ``cuda`` method, the module's file name or "" for this script) when
    ``recv`` may be an instance of a class of this script, or of a workspace module, that
    defines (or inherits) ``cuda``, else None."""
    name = own_cuda_class(model, recv)
    if name is None:
        return _workspace_cuda_method(model, recv)
    defs = {c.name: c for c in model.nodes_of(ast.ClassDef) if isinstance(c, ast.ClassDef)}
    todo, seen = [name], set()
    while todo:
        cls = defs.get(todo.pop(0))
        if cls is None or cls.name in seen:
            continue
        seen.add(cls.name)
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == "cuda":
                return name, stmt, ""
        todo.extend(b.id for b in cls.bases if isinstance(b, ast.Name))
    return None


def own_cuda_class(model: ScriptModel, recv: ast.expr) -> str | None:
    """The name of this script's class defining ``cuda`` that ``recv`` may be an instance
    of (a name or attribute assigned from a call of that class), else None."""
    classes = model.memo(own_cuda_class, lambda: _classes_with_cuda(model))
    if not classes:
        return None
    if isinstance(recv, ast.Name):
        values = model.assigned_from(recv.id)
    elif isinstance(recv, ast.Attribute):
        values = [
            a.value
            for a in model.nodes_of(ast.Assign)
            if isinstance(a, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == recv.attr for t in a.targets)
        ]
    else:
        return None
    for value in values:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id in classes:
                return value.func.id
    return None


def _classes_with_cuda(model: ScriptModel) -> set[str]:
    """Classes of this script whose own body, or a base class of this script, defines
    ``cuda``."""
    defs = {c.name: c for c in model.nodes_of(ast.ClassDef) if isinstance(c, ast.ClassDef)}

    def defines(name: str, seen: frozenset[str]) -> bool:
        cls = defs.get(name)
        if cls is None or name in seen:
            return False
        if any(
            isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == "cuda"
            for s in cls.body
        ):
            return True
        return any(isinstance(b, ast.Name) and defines(b.id, seen | {name}) for b in cls.bases)

    return {name for name in defs if defines(name, frozenset())}


def _workspace_cuda_method(
    model: ScriptModel, recv: ast.expr
) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    from ...semantic import workspace_classes as wc  # noqa: PLC0415 (reads other files)

    if not isinstance(recv, ast.Name) or not model.path or model.path.startswith("<"):
        return None
    for ref in wc.instance_classes(model, recv.id):
        for cls in wc.chain(ref):
            for stmt in cls.node.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == "cuda":
                    return cls.name, stmt, cls.path.name
    return None
