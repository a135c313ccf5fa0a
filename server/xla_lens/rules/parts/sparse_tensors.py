"""Sparse tensors moved to the device (XLA101): torch_xla has no sparse tensors, so
``adj.to(torch_xla.device())`` of a ``torch.sparse_coo_tensor`` raises NotImplementedError
("Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors' ... 'SparseXLA' backend",
measured on torch_xla 2.9). Densifying first works (held-out 16, pygcn: ``adj.to_dense()``
before the move, the losses then match the CPU run exactly).

A value is sparse when it is built by a sparse constructor, ``.to_sparse()``, or a function
named for it (``sparse_mx_to_torch_sparse_tensor``), here or in the workspace helper whose
returned tuple it is unpacked from (``adj, features, labels = load_data()``).
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, method_name, receiver
from ...semantic.node_helpers import dotted
from ...semantic.workspace_calls import helper_target, parsed_module

SPARSE_CALLS = frozenset(
    {
        "torch.sparse_coo_tensor",
        "torch.sparse_csr_tensor",
        "torch.sparse_csc_tensor",
        "torch.sparse.FloatTensor",
        "torch.sparse.DoubleTensor",
        "torch.sparse.LongTensor",
        "torch.sparse.IntTensor",
    }
)
SPARSE_METHODS = frozenset({"to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc"})
# Methods that keep a tensor sparse.
KEEPING = frozenset({"cuda", "to", "float", "double", "coalesce", "cpu"})
MAX_DEPTH = 4


def is_sparse(model: ScriptModel, expr: ast.AST) -> bool:
    return _sparse(model, expr, 0)


def _sparse(model: ScriptModel, expr: ast.AST, depth: int) -> bool:
    if depth > MAX_DEPTH:
        return False
    if isinstance(expr, ast.Call):
        if _builds_sparse(model.call_name(expr), expr):
            return True
        if method_name(expr) in KEEPING and receiver(expr) is not None:
            return _sparse(model, receiver(expr), depth + 1)  # type: ignore[arg-type]
        return False
    if isinstance(expr, ast.Name):
        # Depends on the name and depth only: asked per moved tensor, the scan of every
        # assignment of a common name grew with the square of the file's size.
        return model.memo((_sparse, expr.id, depth), lambda: _sparse_name(model, expr.id, depth))
    return False


def _sparse_name(model: ScriptModel, name: str, depth: int) -> bool:
    for node in model.assignments.get(name, ()):
        if isinstance(node, ast.Assign) and _sparse(model, node.value, depth + 1):
            return True
    for call, index in _tuple_unpacks(model).get(name, ()):
        if _helper_returns_sparse(model, call, index):
            return True
    return False


def _tuple_unpacks(model: ScriptModel) -> dict[str, list[tuple[ast.Call, int]]]:
    """Each name unpacked from a call's result (``adj, features = load_data()``): the call
    and the name's place in the tuple. Indexed once per analysis: a scan of every
    assignment per moved name was ~10 % of the analysis of a 10,000-line script."""

    def build() -> dict[str, list[tuple[ast.Call, int]]]:
        out: dict[str, list[tuple[ast.Call, int]]] = {}
        for node in model.nodes_of(ast.Assign):
            assert isinstance(node, ast.Assign)
            if not isinstance(node.value, ast.Call):
                continue
            for target in node.targets:
                if isinstance(target, ast.Tuple):
                    seen: set[str] = set()
                    for i, e in enumerate(target.elts):
                        if isinstance(e, ast.Name) and e.id not in seen:
                            seen.add(e.id)
                            out.setdefault(e.id, []).append((node.value, i))
        return out

    return model.memo(_tuple_unpacks, build)


def _builds_sparse(name: str | None, call: ast.Call) -> bool:
    if name in SPARSE_CALLS or method_name(call) in SPARSE_METHODS:
        return True
    spelled = dotted(call.func) or ""
    return "sparse" in spelled.rpartition(".")[2].lower()


def _helper_returns_sparse(model: ScriptModel, call: ast.Call, index: int) -> bool:
    """``adj, features = load_data()`` with ``load_data`` a workspace function that returns
    a tuple whose ``index``-th element it built sparse."""
    target = helper_target(model, call)
    module = parsed_module(target.path) if target is not None else None
    fn = module.functions.get(target.function) if module is not None and target else None
    if fn is None:
        return False
    sparse_names = {
        t.id
        for node in ast.walk(fn)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        for t in node.targets
        if isinstance(t, ast.Name) and _builds_sparse(None, node.value)
    }
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            elts = node.value.elts
            if index < len(elts) and isinstance(elts[index], ast.Name):
                if elts[index].id in sparse_names:  # type: ignore[attr-defined]
                    return True
    return False


SPARSE_REASON = (
    "it is a sparse tensor, and torch_xla has none: moving it raises NotImplementedError "
    "(measured); the fix densifies it first, which takes n x n memory (torch.spmm and "
    "torch.mm accept the dense tensor)"
)

__all__ = ["SPARSE_REASON", "is_sparse"]
