"""A ``.cuda()`` move guarded by ``x.is_cuda`` (XLA101):

    base = torch.zeros(mean.size())
    if h.is_cuda:
        base = base.cuda()

held-out 21 (a2c-ppo's DiagGaussian). XLA tensors answer ``is_cuda`` with False, so once the
move becomes ``.to(torch_xla.device())`` its guard never lets it run: the tensor stays on the
CPU and is copied into the graph on every call. The guard asked "is ``h`` on the accelerator?",
and the move follows ``h``: the fix asks ``h.device.type in ("cuda", "xla")`` and moves to
``h.device``. Both keep the CUDA run as it was (a first version asked ``== "xla"`` and moved
to ``torch_xla.device()``: in a project whose model stays on CUDA until its other files are
converted, rnn-transducer's decoder then indexed a CUDA embedding with a CPU token, held-out
159). Not when the guarded block holds other CUDA calls: those would then run on the XLA host.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel

XLA_TEST = '{}.device.type in ("cuda", "xla")'


def is_cuda_guard(model: ScriptModel, call: ast.Call) -> ast.Attribute | None:
    """The ``x.is_cuda`` test of the ``if`` (or conditional expression) whose true side holds
    ``call``, when that side moves to CUDA only with ``.cuda()``."""
    scope = model.enclosing_function(call)
    child: ast.AST = call
    node = model.parent(call)
    while node is not None and node is not scope:
        if isinstance(node, ast.If | ast.IfExp):
            body = node.body if isinstance(node.body, list) else [node.body]
            test = node.test
            if (
                any(child is s for s in body)
                and isinstance(test, ast.Attribute)
                and test.attr == "is_cuda"
                and _only_cuda_moves(model, body)
            ):
                return test
        child, node = node, model.parent(node)
    return None


def guard_test(model: ScriptModel, test: ast.Attribute) -> str:
    return XLA_TEST.format(model.segment(test.value))


def guard_device(model: ScriptModel, test: ast.Attribute) -> str:
    """Where the guarded move goes: the tested tensor's own device."""
    return f"{model.segment(test.value)}.device"


def _only_cuda_moves(model: ScriptModel, body: list) -> bool:
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call) and (model.call_name(n) or "").startswith("torch.cuda."):
                return False
    return True
