"""Reads that hand numpy a tensor with nothing copying it to the host first: ``t.numpy()``,
``np.array(t)`` and ``np.asarray(t)`` (numpy asks the tensor for its memory through
``Tensor.__array__``, which calls ``.numpy()``). On an XLA tensor they raise (``TypeError:
can't convert xla:0 device type tensor to numpy``, torch_xla 2.9), as on a CUDA one. A step
closure would keep the crash; the fix copies first: ``t.cpu().numpy()``, ``np.array(t.cpu())``
(on a CPU tensor ``.cpu()`` is the tensor itself: the original's run does not change). Part of
XLA401.

No ``.detach()`` is added: ``.numpy()`` raises on a tensor that requires grad too, so where
the original ran the line its tensor did not, and neither does the ``.cpu()`` copy.

Outside the training loop (an evaluation collecting predictions) only a tensor the script
computes on the device is reported (``device_computed``): a dataset's ``torch.from_numpy`` or
a loader's batch stays on the CPU after conversion, and reporting it would be noise."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ...semantic.host_calls import is_builtin_call, names_cpu
from ...semantic.host_values import HostValues
from ...semantic.loop_frames import loop_nodes
from ...semantic.model import ScriptModel, method_name, receiver
from ...semantic.node_helpers import keyword
from ...semantic.tensors import is_torch_tensor_function
from ..base import Fix, Replace
from .checkpoint_objects import placed_module

NUMPY_RAISES = (
    'raises TypeError ("can\'t convert xla:0 device type tensor to numpy", as for a CUDA tensor)'
)
NUMPY_USE = (
    "read it with `.cpu().numpy()`, which works on both (on a CPU tensor `.cpu()` is the tensor "
    "itself) and on the XLA device reads it on the host, an extra sync every step"
)
EVERY_STEP = "an extra sync every step"
ONCE = "one copy each time the line runs (it is outside the training loop)"
CONVERTERS = frozenset({"numpy.array", "numpy.asarray"})
HOST_READS = frozenset({"cpu", "item", "tolist", "numpy"})
CONTAINERS = (
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
CONTAINER_BUILTINS = frozenset({"list", "tuple", "dict", "set", "sorted", "zip", "map", "range"})
# What copies a ``.numpy()`` array at once (the array is not kept, so whether it shares the
# tensor's memory cannot matter).
COPYING_BUILTINS = frozenset({"print", "float", "int", "str", "repr", "format", "round", "len"})
# Array methods that return a new array or a number (never a view of it).
COPYING_METHODS = frozenset(
    {"tolist", "item", "copy", "round", "astype", "mean", "sum", "max", "min", "std", "var"}
    | {"argmax", "argmin", "flatten"}
)
COPYING_NUMPY = frozenset(
    f"numpy.{n}"
    for n in ("mean", "sum", "max", "min", "std", "var", "median", "argmax", "argmin", "array")
)
ALIASING = (
    "on the CPU `.numpy()` shares the tensor's memory, while `.cpu().numpy()` of an XLA tensor "
    "is a copy: code that keeps this array and expects it to follow later in-place changes of "
    "the tensor (or writes into it) would see a difference"
)
ASARRAY_ALIASING = ALIASING.replace("`.numpy()`", "`np.asarray(t)`").replace(
    "`.cpu().numpy()`", "`np.asarray(t.cpu())`"
)
COPY_KEYWORD = (
    "`copy=` asks numpy to share the tensor's memory where it can: on the CPU it may share it, "
    "while the `.cpu()` copy of an XLA tensor never does"
)


def bare_numpy(model: ScriptModel, call: ast.Call) -> bool:
    """``t.numpy()`` with nothing copying ``t`` to the host first (``.cpu()``, ``.to('cpu')``;
    ``numpy(force=True)`` copies itself): it runs only on a CPU tensor."""
    if method_name(call) != "numpy" or call.args or call.keywords:
        return False
    return not _copied(model, receiver(call))


def numpy_conversion(model: ScriptModel, call: ast.Call) -> ast.expr | None:
    """The argument of ``np.array(t)`` / ``np.asarray(t)`` when nothing in it copies it to the
    host first (``.cpu()``, ``.to('cpu')``, ``.item()``, ``.tolist()``, ``.numpy()``)."""
    if model.call_name(call) not in CONVERTERS or not call.args:
        return None
    arg = call.args[0]
    return None if isinstance(arg, ast.Starred) or _copied(model, arg) else arg


def tensor_valued(values: HostValues, expr: ast.AST, depth: int = 0) -> bool:
    """Whether the argument of ``np.array(...)`` is a tensor, not a Python container of them:
    ``np.array(preds)`` of a list of tensors must get no ``.cpu()`` (a list has none). A name
    counts only where every binding reaching it is one (a parameter or a global is unknown)."""
    if depth > 6 or isinstance(expr, CONTAINERS):
        return False
    if isinstance(expr, ast.Name):
        bound = values.reaching(expr)
        return bool(bound) and all(tensor_valued(values, v, depth + 1) for v in bound)
    if isinstance(expr, ast.Call):
        return not is_builtin_call(values.model, expr, CONTAINER_BUILTINS)
    if isinstance(expr, ast.Attribute):
        return tensor_valued(values, expr.value, depth + 1)
    if isinstance(expr, ast.BinOp):  # ``t + 1`` is a tensor, ``a + b`` of two lists a list
        return any(tensor_valued(values, v, depth + 1) for v in (expr.left, expr.right))
    if isinstance(expr, ast.IfExp):
        return all(tensor_valued(values, v, depth + 1) for v in (expr.body, expr.orelse))
    if isinstance(expr, ast.UnaryOp):
        return tensor_valued(values, expr.operand, depth + 1)
    return isinstance(expr, ast.Subscript)  # an element or a slice of one


def _copied(model: ScriptModel, node: ast.AST | None) -> bool:
    """A chain (``t.detach().cpu()[0]``) with a copy to the host in it."""
    while node is not None:
        if isinstance(node, ast.Call):
            name = method_name(node)
            device = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "device")]
            if name in HOST_READS or (name == "to" and any(names_cpu(model, d) for d in device)):
                return True
            node = receiver(node)
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            return False
    return False


def crashes_outside_loops(
    model: ScriptModel, values: HostValues, reports: frozenset[str]
) -> Iterator[tuple[ast.Call, str, Fix]]:
    """A bare ``t.numpy()`` / ``np.array(t)`` outside the training loop (an evaluation
    collecting predictions) raises on an XLA tensor all the same; there only a tensor the
    script computes on the device counts (a dataset's or loader's CPU tensors stay there)."""
    inside = model.memo(crashes_outside_loops, lambda: {n for _, n in loop_nodes(model)})
    for call in model.calls:
        if call in inside:
            continue
        if bare_numpy(model, call):
            tensor = receiver(call)
        else:
            tensor = numpy_conversion(model, call)
            if tensor is not None and not tensor_valued(values, tensor):
                continue
        if tensor is None or not values.is_device(tensor) or values.is_host(tensor):
            continue
        crash = crash_read(model, call, False, reports, in_loop=False)
        if crash is not None and device_computed(model, values, tensor):
            yield call, *crash


def crash_read(
    model: ScriptModel, call: ast.Call, on_cpu: bool, reports: frozenset[str], in_loop: bool
) -> tuple[str, Fix] | None:
    """The message and fix of ``call`` when it is a bare ``t.numpy()`` or an ``np.array(t)`` /
    ``np.asarray(t)`` with nothing copying ``t`` to the host first."""
    if bare_numpy(model, call):
        return _message(model, call, on_cpu, in_loop), numpy_fix(model, call, reports)
    tensor = numpy_conversion(model, call)
    if tensor is None:
        return None
    return _message(model, call, on_cpu, in_loop), conversion_fix(model, call, tensor, reports)


def _shown(model: ScriptModel, node: ast.AST | None) -> str:
    text = " ".join(model.segment(node).split()) if node is not None else "it"
    return f"`{text if len(text) <= 40 else text[:37] + '...'}`"


def _message(model: ScriptModel, call: ast.Call, on_cpu: bool, in_loop: bool) -> str:
    tensor = numpy_conversion(model, call)
    if tensor is None:
        what, shown, use = ".numpy()", _shown(model, receiver(call)), NUMPY_USE
    else:
        func = model.segment(call.func)
        what, shown = f"{func}()", _shown(model, tensor)
        use = (
            f"copy it to the host first, `{func}(t.cpu())`, which works on both (on a CPU "
            f"tensor `.cpu()` is the tensor itself) and on the XLA device reads it on the host, "
            f"{EVERY_STEP}"
        )
    if not in_loop:
        use = use.replace(EVERY_STEP, ONCE)
    if on_cpu:
        return (
            f"{what} of {shown} runs only on a CPU tensor: nothing in this script places its "
            f"tensors on a device (XLA117), so it runs as written; once the model and its "
            f"batches are on the XLA device, it {NUMPY_RAISES}: {use}"
        )
    return (
        f"{what} of {shown} runs only on a CPU tensor (it raises on a CUDA one too, so "
        f"where the original ran this line the tensor was on the CPU): if it is on the XLA "
        f"device after conversion, this line {NUMPY_RAISES}, a crash the conversion "
        f"introduces; {use}"
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
        # ``.astype(t, copy=False)`` / ``.round(out=a)`` may hand back the array itself.
        return (
            isinstance(outer, ast.Call)
            and method_name(outer) in COPYING_METHODS
            and not any(k.arg in ("copy", "out", None) for k in outer.keywords)
        )
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


def conversion_fix(
    model: ScriptModel, call: ast.Call, tensor: ast.expr, reports: frozenset[str]
) -> Fix:
    """``np.array(t)`` → ``np.array(t.cpu())``. ``np.array`` copies by default: on the CPU
    the original got a copy of the tensor, and after the fix it gets a copy of the host copy,
    the same values in an array of its own, so the fix is safe (unless ``copy=`` asks numpy
    to share memory). ``np.asarray`` of a CPU tensor shares its memory, of the ``.cpu()`` copy
    of an XLA tensor it does not: safe only where the array is consumed at once."""
    text = model.segment(tensor)
    if not isinstance(tensor, ast.Name | ast.Attribute | ast.Call | ast.Subscript):
        text = f"({text})"
    func = model.segment(call.func)
    if model.call_name(call) == "numpy.asarray":
        reason = "" if _consumed_at_once(model, call, reports) else ASARRAY_ALIASING
    else:
        copy = keyword(call, "copy")
        keeps = copy is None or (isinstance(copy.value, ast.Constant) and copy.value.value is True)
        reason = "" if keeps else COPY_KEYWORD
    return Fix(
        f"Copy it to the host first: `{func}(t.cpu())`",
        (Replace(model.span(tensor), text + ".cpu()"),),
        safe=not reason,
        review_reason=reason,
    )


def device_computed(model: ScriptModel, values: HostValues, expr: ast.AST, depth: int = 0) -> bool:
    """Whether ``expr`` is computed from a tensor the script puts on a device: a ``.to(d)`` /
    ``.cuda()`` move (``d`` not the CPU, not a dtype), a torch constructor given a non-CPU
    ``device=``, or a model's output (followed through the bindings that reach a name)."""
    if depth > 6:
        return False
    deeper = depth + 1
    if isinstance(expr, ast.Name):
        bound = values.reaching(expr)
        return bool(bound) and any(device_computed(model, values, v, deeper) for v in bound)
    if isinstance(expr, ast.Attribute | ast.Subscript | ast.Starred):
        return device_computed(model, values, expr.value, deeper)
    parts: list[ast.expr] = []
    if isinstance(expr, ast.BinOp):
        parts = [expr.left, expr.right]
    elif isinstance(expr, ast.UnaryOp):
        parts = [expr.operand]
    elif isinstance(expr, ast.IfExp):
        parts = [expr.body, expr.orelse]
    elif isinstance(expr, ast.List | ast.Tuple):
        parts = list(expr.elts)
    elif isinstance(expr, ast.Call):
        if _moves_to_device(model, values, expr, deeper):
            return True
        name = model.call_name(expr)
        recv = receiver(expr)
        if recv is not None and values.tensors.is_tensor(recv):
            parts = [recv, *expr.args]
        elif is_torch_tensor_function(name):
            parts = list(expr.args)
        elif values.tensors.is_tensor(expr):
            # ``net(x)``: a call ``TensorNames`` takes for a model's forward pass.
            return _device_model_call(model, values, expr, deeper)
    return any(device_computed(model, values, p, deeper) for p in parts)


def _device_model_call(model: ScriptModel, values: HostValues, call: ast.Call, depth: int) -> bool:
    """A model placed on a device, one given a device tensor, or one whose placement this
    script cannot tell (a parameter ``net``, ``self.model``). A model the script builds here
    and never moves (``m = resnet18(); m(x)``) runs on the CPU; a method of a model not
    known to be placed (``tf_model.generate(ids)``) proves nothing."""
    func = call.func
    owner = func.value if isinstance(func, ast.Attribute) else None
    if placed_module(model, func) or placed_module(model, owner):
        return True
    if any(device_computed(model, values, a, depth) for a in call.args):
        return True
    if isinstance(func, ast.Name):
        return not values.reaching(func)
    return isinstance(owner, ast.Name) and owner.id == "self"


def _moves_to_device(model: ScriptModel, values: HostValues, call: ast.Call, depth: int) -> bool:
    name = method_name(call)
    if name == "cuda" and receiver(call) is not None:
        return True
    if name == "to" and receiver(call) is not None:
        dest = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "device")]
    elif is_torch_tensor_function(model.call_name(call)):
        dest = [k.value for k in call.keywords if k.arg == "device"]
    else:
        return False
    return any(_device(model, values, d, depth) for d in dest)


def _device(model: ScriptModel, values: HostValues, dest: ast.expr, depth: int) -> bool:
    """Whether ``dest`` names a device other than the CPU: ``x.device`` is the device of
    ``x`` (a tensor made on the device of a CPU tensor stays on the CPU)."""
    if names_cpu(model, dest) or _dtype(model, dest):
        return False
    if isinstance(dest, ast.Attribute) and dest.attr == "device":
        return device_computed(model, values, dest.value, depth)
    return True


def _dtype(model: ScriptModel, node: ast.expr) -> bool:
    """``torch.float16`` and the like (``t.to(torch.float16)`` converts, it does not move)."""
    return isinstance(node, ast.Attribute) and (model.qualname(node) or "").startswith("torch.")
