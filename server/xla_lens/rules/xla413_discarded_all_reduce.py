"""XLA413: ``xm.all_reduce(op, tensor)`` whose result is thrown away.

``torch_xla.core.xla_model.all_reduce`` reduces a *list* of tensors in place, but given a single
tensor it returns a new one and leaves its input as it was (its docstring, torch_xla 2.9). So
``xm.all_reduce(xm.REDUCE_SUM, m.running_mean, scale=1/n)`` as a statement reduces nothing: the
BatchNorm statistics the author meant to average stay each replica's own (held-out 171's
control, test-tpu). ``torch.distributed.all_reduce`` is in place either way, which is where the
habit comes from.

Reported where the call is a statement and its input is a single tensor as far as this file
shows (an attribute, a subscript, a torch function or tensor method's result, or a name bound
only to such values; not what a function of the script or of torch_xla returns:
``xm._fetch_gradients(optimizer)`` is a list). The fix, for
review, passes the tensor in a list, the in-place form (``xm.all_reduce(op, [t], ...)``): it
makes the program do what it says, which changes what it computes today.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.model import ScriptModel, arg_or_keyword
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity

CODE = "XLA413"
ALL_REDUCE = "torch_xla.core.xla_model.all_reduce"
SEQUENCES = ast.List | ast.Tuple | ast.ListComp | ast.GeneratorExp
REVIEW = (
    "the reduction then happens, in place: the values this tensor holds after the call change "
    "(today each replica keeps its own)"
)


# Calls that give a list of tensors (reduced in place when passed on).
LIST_RETURNING = frozenset({"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit"})
# Tensor methods that give a tensor.
TENSOR_METHODS = frozenset(
    {"clone", "detach", "float", "double", "half", "to", "cuda", "view", "reshape", "flatten"}
    | {"contiguous", "sum", "mean", "mul", "div", "add", "sub", "abs", "sqrt", "pow"}
    | {"squeeze", "unsqueeze", "expand", "repeat", "type_as", "new_tensor", "new_zeros"}
)


def _tensor_call(model: ScriptModel, call: ast.Call) -> bool:
    """A call known to give one tensor: a ``torch`` function (not a splitting one) or a
    tensor method. A call of the script or of torch_xla (``xm._fetch_gradients(opt)``, a list:
    held-out 181's GPT-SoVITS trainer) is not known to."""
    name = model.call_name(call) or ""
    if name.startswith("torch_xla"):
        return False
    if name.startswith("torch."):
        return name.rpartition(".")[2] not in LIST_RETURNING
    return isinstance(call.func, ast.Attribute) and call.func.attr in TENSOR_METHODS


def _single_value(model: ScriptModel, node: ast.expr) -> bool:
    if isinstance(node, SEQUENCES | ast.Starred | ast.Name):
        return False
    if isinstance(node, ast.Call):
        return _tensor_call(model, node) and not _builds_sequence(model, node)
    if isinstance(node, ast.BinOp):
        return not _builds_sequence(model, node)
    return isinstance(node, ast.Attribute | ast.Subscript)


def _single_tensor(model: ScriptModel, node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        values = model.assigned_from(node.id)
        return bool(values) and all(_single_value(model, v) for v in values)
    return _single_value(model, node)


def _builds_sequence(model: ScriptModel, value: ast.expr) -> bool:
    """``list(...)``, ``tuple(...)``, ``[...] + [...]``: a sequence, reduced in place."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id in {"list", "tuple", "sorted"}
    if isinstance(value, ast.BinOp):
        return isinstance(value.left, SEQUENCES) or isinstance(value.right, SEQUENCES)
    return False


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.calls_to(ALL_REDUCE):
        if not isinstance(model.parent(call), ast.Expr):
            continue  # the result is used: the single-tensor form is meant
        inputs = arg_or_keyword(call, 1, "inputs")
        if inputs is None or not _single_tensor(model, inputs):
            continue
        shown = model.segment(inputs)
        fix = Fix(
            f"Reduce in place: pass [{shown}]",
            (Replace(model.span(inputs), f"[{shown}]"),),
            safe=False,
            review_reason=REVIEW,
        )
        yield Finding(
            CODE,
            f"xm.all_reduce given the single tensor `{shown}` returns the reduced value and "
            "leaves the input unchanged; the result is thrown away here, so nothing is reduced "
            f"(the fix needs review: {REVIEW})",
            model.span(call),
            Severity.WARNING,
            fix=fix,
        )


HOVER = """\
**XLA413 · xm.all_reduce on a single tensor is not in place**

`xm.all_reduce(op, [t1, t2])` reduces the tensors of the list in place; `xm.all_reduce(op, t)`
returns a new tensor and leaves `t` as it was. Keep the result (`t = xm.all_reduce(op, t)`) or
pass a list.
"""

RULE = Rule(
    code=CODE,
    name="discarded-all-reduce",
    category=Category.CORRECTNESS,
    summary="xm.all_reduce(op, tensor) as a statement reduces nothing (a single tensor is not "
    "reduced in place) → pass [tensor] or keep the result",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={ALL_REDUCE: HOVER},
)
