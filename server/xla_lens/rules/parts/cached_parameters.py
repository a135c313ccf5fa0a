"""Parameters a module keeps in a plain container it fills in ``__init__`` (XLA410):
pt.darts' ``SearchCNNController`` (held-out 89) runs ``self._alphas = []`` then, for each
``n, p in self.named_parameters()`` whose name holds "alpha", ``self._alphas.append((n, p))``;
``alphas()`` yields from that list and the architecture optimizer is built from it.

``nn.Module.to`` keeps each Parameter object when the new tensor can share its storage type
(a dtype cast, CPU to CUDA); CPU to XLA cannot, so every Parameter is replaced (measured on
torch_xla 2.9: the cached entry ``is`` the module's parameter on the CPU, and after
``.to(xla)`` it is not, and is still a CPU tensor). The container goes on holding the old
ones. ``nn.ParameterList`` / ``nn.ParameterDict`` are registered and follow the move: not
reported.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from ...semantic.line_refs import line_ref
from ...semantic.workspace_classes import ClassRef

PARAMETER_SOURCES = frozenset({"parameters", "named_parameters"})
CONTAINERS = frozenset({"list", "dict", "tuple", "OrderedDict"})


@dataclass(frozen=True)
class Cache:
    attr: str  # "_alphas"
    owner: str  # the class whose __init__ fills it
    where: str  # "search_cnn.py:101" or "line 12"
    reader: str  # a method that reads it afterwards ("alphas")


def _reads_parameters(node: ast.AST) -> bool:
    """``self.named_parameters()``, ``self.net.parameters()``: the module's own parameters."""
    for n in ast.walk(node):
        if not (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in PARAMETER_SOURCES
        ):
            continue
        root = n.func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id == "self":
            return True
    return False


def _self_attr(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def _empty_container(value: ast.AST) -> bool:
    if isinstance(value, ast.List | ast.Dict) and not (
        getattr(value, "elts", None) or getattr(value, "keys", None)
    ):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in CONTAINERS
        and not value.args
    )


def _filled_in(init: ast.FunctionDef) -> dict[str, ast.stmt]:
    """Attributes ``__init__`` fills with the module's parameters: ``self.a = [p for p in
    self.parameters()]`` / ``list(self.parameters())``, or an empty container then
    ``self.a.append(...)`` / ``self.a[k] = ...`` inside ``for ... in self.(named_)parameters()``."""
    empty: dict[str, ast.stmt] = {}
    filled: dict[str, ast.stmt] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            attr = _self_attr(node.targets[0])
            if attr is None:
                continue
            if _empty_container(node.value):
                empty[attr] = node
            elif (
                isinstance(node.value, ast.ListComp | ast.DictComp | ast.Call)
                and _reads_parameters(node.value)
                and not _registered(node.value)
            ):
                filled[attr] = node
    for node in ast.walk(init):
        if not isinstance(node, ast.For) or not _reads_parameters(node.iter):
            continue
        for inner in ast.walk(node):
            attr = None
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr in {"append", "extend", "add", "insert"}
            ):
                attr = _self_attr(inner.func.value)
            elif isinstance(inner, ast.Assign) and isinstance(inner.targets[0], ast.Subscript):
                attr = _self_attr(inner.targets[0].value)
            if attr is not None and attr in empty:
                filled.setdefault(attr, empty[attr])
    return filled


def _registered(value: ast.AST) -> bool:
    """``nn.ParameterList(...)`` / ``nn.ParameterDict(...)``: registered, moved with the module."""
    return isinstance(value, ast.Call) and (
        getattr(value.func, "attr", getattr(value.func, "id", ""))
        in {"ParameterList", "ParameterDict", "ModuleList", "ModuleDict"}
    )


def _reader(classes: tuple[ClassRef, ...], attr: str) -> str | None:
    """A method other than ``__init__`` that reads ``self.<attr>``."""
    for ref in classes:
        for stmt in ref.node.body:
            if not isinstance(stmt, ast.FunctionDef) or stmt.name == "__init__":
                continue
            for n in ast.walk(stmt):
                if _self_attr(n) == attr and isinstance(n.ctx, ast.Load):  # type: ignore[attr-defined]
                    return stmt.name
    return None


def class_caches(classes: tuple[ClassRef, ...], script: Path) -> tuple[Cache, ...]:
    """The caches of parameters the constructor of ``classes[0]`` fills and a method reads."""
    if any(
        isinstance(s, ast.FunctionDef) and s.name == "_apply"
        for ref in classes
        for s in ref.node.body
    ):
        return ()  # the class redoes its bookkeeping after a move itself
    out: list[Cache] = []
    for ref in classes:
        init = next(
            (s for s in ref.node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"),
            None,
        )
        if init is None:
            continue
        for attr, stmt in _filled_in(init).items():
            reader = _reader(classes, attr)
            if reader is None:
                continue
            where = (
                f"line {line_ref(stmt.lineno)}"
                if ref.path == script
                else f"{ref.path.name}:{stmt.lineno}"
            )
            out.append(Cache(attr, ref.name, where, reader))
    return tuple(out)


__all__ = ["Cache", "class_caches"]
