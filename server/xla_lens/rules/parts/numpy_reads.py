"""``t.numpy()`` with nothing copying ``t`` to the host first: on an XLA tensor it raises
(``TypeError: can't convert xla:0 device type tensor to numpy``, torch_xla 2.9), as on a CUDA
one. A step closure would keep the crash; the fix is ``t.cpu().numpy()``, which on a CPU
tensor is the tensor itself (the original's run does not change). Part of XLA401.

No ``.detach()`` is added: ``.numpy()`` raises on a tensor that requires grad too, so where
the original ran the line its tensor did not, and neither does the ``.cpu()`` copy."""

from __future__ import annotations

import ast
import re

from ...semantic.host_calls import is_builtin_call, names_cpu
from ...semantic.model import ScriptModel, method_name, receiver
from ..base import Fix, Replace

NUMPY_RAISES = (
    'raises TypeError ("can\'t convert xla:0 device type tensor to numpy", as for a CUDA tensor)'
)
NUMPY_USE = (
    "read it with `.cpu().numpy()`, which works on both (on a CPU tensor `.cpu()` is the tensor "
    "itself) and on the XLA device reads it on the host, an extra sync every step"
)
# What copies a ``.numpy()`` array at once (the array is not kept, so whether it shares the
# tensor's memory cannot matter).
COPYING_BUILTINS = frozenset({"print", "float", "int", "str", "repr", "format", "round", "len"})
COPYING_METHODS = frozenset({"tolist", "item", "copy"})
COPYING_NUMPY = frozenset(
    f"numpy.{n}"
    for n in ("mean", "sum", "max", "min", "std", "var", "median", "argmax", "argmin", "array")
)
ALIASING = (
    "on the CPU `.numpy()` shares the tensor's memory, while `.cpu().numpy()` of an XLA tensor "
    "is a copy: code that keeps this array and expects it to follow later in-place changes of "
    "the tensor (or writes into it) would see a difference"
)


def bare_numpy(model: ScriptModel, call: ast.Call) -> bool:
    """``t.numpy()`` with nothing copying ``t`` to the host first (``.cpu()``, ``.to('cpu')``;
    ``numpy(force=True)`` copies itself): it runs only on a CPU tensor."""
    if method_name(call) != "numpy" or call.args or call.keywords:
        return False
    node = receiver(call)
    while node is not None:
        if isinstance(node, ast.Call):
            name = method_name(node)
            device = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "device")]
            if name == "cpu" or (name == "to" and any(names_cpu(model, d) for d in device)):
                return False
            node = receiver(node)
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            return True
    return True


def numpy_message(model: ScriptModel, call: ast.Call, on_cpu: bool) -> str:
    recv = receiver(call)
    text = " ".join(model.segment(recv).split()) if recv is not None else "it"
    shown = f"`{text if len(text) <= 40 else text[:37] + '...'}`"
    if on_cpu:
        return (
            f".numpy() of {shown} runs only on a CPU tensor: nothing in this script places its "
            f"tensors on a device (XLA117), so it runs as written; once the model and its "
            f"batches are on the XLA device, it {NUMPY_RAISES}: {NUMPY_USE}"
        )
    return (
        f".numpy() of {shown} runs only on a CPU tensor (it raises on a CUDA one too, so "
        f"where the original ran this line the tensor was on the CPU): if it is on the XLA "
        f"device after conversion, this line {NUMPY_RAISES}, a crash the conversion "
        f"introduces; {NUMPY_USE}"
    )


def _consumed_at_once(model: ScriptModel, call: ast.Call, reports: frozenset[str]) -> bool:
    """The array is formatted, printed, reported (``reports``: the methods of a reporting
    call) or reduced right away, never kept."""
    parent = model.parent(call)
    if isinstance(parent, ast.Tuple):  # ``"%f %f" % (a.numpy(), b.numpy())``
        parent = model.parent(parent)
    if isinstance(parent, ast.FormattedValue):
        return True
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Mod):
        return isinstance(parent.left, ast.Constant | ast.JoinedStr) and parent.left is not call
    if isinstance(parent, ast.Attribute):
        outer = model.parent(parent)
        return isinstance(outer, ast.Call) and method_name(outer) in COPYING_METHODS
    if isinstance(parent, ast.Call) and parent.func is not call:
        return (
            is_builtin_call(model, parent, COPYING_BUILTINS)
            or method_name(parent) in reports
            or model.call_name(parent) in COPYING_NUMPY
        )
    return False


def numpy_fix(model: ScriptModel, call: ast.Call, reports: frozenset[str]) -> Fix:
    text = model.segment(call)
    end = re.search(r"\.\s*numpy\s*\(\s*\)\s*\Z", text)
    assert end is not None  # ``_bare_numpy``: a ``.numpy()`` call with no arguments
    reason = "" if _consumed_at_once(model, call, reports) else ALIASING
    return Fix(
        "Copy it to the host first: `.cpu().numpy()`",
        (Replace(model.span(call), text[: end.start()] + ".cpu().numpy()"),),
        safe=not reason,
        review_reason=reason,
    )
