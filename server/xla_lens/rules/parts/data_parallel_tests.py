"""A CUDA device count that decides whether nn.DataParallel is in use (XLA403, held-out 27:
YOLOv4's ``if torch.cuda.device_count() > 1: model = torch.nn.DataParallel(model)`` and, at
evaluation, ``if torch.cuda.device_count() > 1: eval_model.load_state_dict(model.module...)``).

On an XLA host the count is 0, so both tests take the single-model branch, which is what the
conversion needs once XLA110 removes the wrapper. The generic advice (count XLA replicas with
the world size) would break the pair: ``.module`` of a model that is no longer wrapped.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel

DATA_PARALLEL = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
    }
)


def data_parallel_test(model: ScriptModel, call: ast.Call) -> int | None:
    """For a device count in an ``if`` test (``count > 1``): the line where the script wraps a
    model in nn.DataParallel under such a test, when this test's body wraps one or reads
    ``.module``; None otherwise."""
    guard = _guard(model, call)
    if guard is None:
        return None
    wraps = _wrap_line(model, guard)
    reads_module = any(
        isinstance(n, ast.Attribute) and n.attr == "module" for s in guard.body for n in ast.walk(s)
    )
    if wraps is not None:
        return wraps
    if not reads_module:
        return None
    for other in model.nodes_of(ast.If):
        assert isinstance(other, ast.If)
        if other is guard or not _counts_devices(model, other.test):
            continue
        line = _wrap_line(model, other)
        if line is not None:
            return line
    return None


def _guard(model: ScriptModel, call: ast.Call) -> ast.If | None:
    child: ast.AST = call
    for node in model.ancestors(call):
        if isinstance(node, ast.If):
            return node if node.test is child or _contains(node.test, call) else None
        if isinstance(node, ast.stmt):
            return None
        child = node
    return None


def _contains(test: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(test))


def _counts_devices(model: ScriptModel, test: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and model.call_name(n) == "torch.cuda.device_count"
        for n in ast.walk(test)
    )


def _wrap_line(model: ScriptModel, guard: ast.If) -> int | None:
    for stmt in guard.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call) and model.call_name(n) in DATA_PARALLEL:
                return n.lineno
    return None
