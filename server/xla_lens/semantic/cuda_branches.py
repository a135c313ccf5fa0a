"""Branches that never run on an XLA host: the body of ``if torch.cuda.is_available():`` (or
``torch.accelerator.is_available()``, which knows no XLA device), of ``if device.type ==
"cuda":`` and of ``if x.is_cuda:``, each possibly ``and``-ed with other conditions. An XLA
device's type is ``"xla"`` and an XLA tensor's ``is_cuda`` is False, whether the device came
from a converted picker or not (held-out 77, WaveRNN: ``if device.type == 'cuda' and
torch.cuda.device_count() > 1:`` around its DataParallel workaround). ``not``/``or`` tests do
not count. Pure analysis."""

from __future__ import annotations

import ast

from .model import ScriptModel, const_str

AVAILABILITY = frozenset({"torch.cuda.is_available", "torch.accelerator.is_available"})


def cuda_only_branch(model: ScriptModel, node: ast.AST, availability: bool = True) -> ast.If | None:
    """The ``if`` whose body holds ``node`` and whose test is False on an XLA host; without
    ``availability``, only device-type tests count (an ``is_available()`` branch may hold what
    the conversion must enable, such as DDP: improved-diffusion's ``use_ddp``)."""
    child = node
    for a in model.ancestors(node):
        if isinstance(a, ast.If) and child in a.body and requires_cuda(model, a.test, availability):
            return a
        child = a
    return None


def requires_cuda(model: ScriptModel, test: ast.expr, availability: bool = True) -> bool:
    if isinstance(test, ast.Call):
        return availability and model.call_name(test) in AVAILABILITY
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(requires_cuda(model, v, availability) for v in test.values)
    if isinstance(test, ast.Attribute):  # ``x.is_cuda``
        return test.attr == "is_cuda" and model.qualname(test) is None
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.left, ast.Attribute)
        and test.left.attr == "type"
        and model.qualname(test.left) is None
    ):
        return const_str(test.comparators[0]) == "cuda"
    return False


def short_circuited(model: ScriptModel, node: ast.AST, availability: bool = True) -> bool:
    """``node`` is in an operand of ``and`` after one that is False on an XLA host
    (``device.type == 'cuda' and torch.cuda.device_count() > 1``): it never runs there."""
    child = node
    for a in model.ancestors(node):
        if isinstance(a, ast.BoolOp) and isinstance(a.op, ast.And) and child in a.values:
            before = a.values[: a.values.index(child)]  # type: ignore[arg-type]
            if any(requires_cuda(model, v, availability) for v in before):
                return True
        if isinstance(a, ast.stmt):
            return False
        child = a
    return False
