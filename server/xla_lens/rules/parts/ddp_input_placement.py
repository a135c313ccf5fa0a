"""Whether a forward input of a DDP model is visibly on the device.

Without ``device_ids`` DDP no longer moves forward inputs, so each input must be on the
device already: ``.to(device)``, ``.cuda()``, built with ``device=...``, the batch of an
``MpDeviceLoader``, or a value of this file that comes from one of those (a local binding,
an element stored a few lines up, a function of this file that returns one). Anything not
visibly so counts as not on the device. ``ddp_inputs.py`` follows the DDP model to its
forward calls and asks this of their inputs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...semantic.calls import callee
from ...semantic.device_datasets import yields_device_batches
from ...semantic.host_calls import HOST_CONSTRUCTORS
from ...semantic.loaders import is_xla_loader
from ...semantic.model import ScriptModel, method_name
from ...semantic.tensors import TensorNames, is_torch_tensor_function

DDP_NAMES = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Module methods that return the module itself.
SELF_RETURNING = frozenset({"to", "cuda", "train", "eval", "float", "half", "bfloat16"})
# Tensor methods whose result stays where the tensor is.
HOST_METHODS = frozenset({"cpu", "numpy", "tolist", "item"})
DTYPES = frozenset(
    {"float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "long",
     "int32", "int64", "int8", "uint8", "bool", "dtype"}
)  # fmt: skip


class InputPlacement:
    """Where the values of one script are, as far as this file shows."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model

    def certainly_cpu(self, value: ast.expr) -> bool:
        """A torch factory without ``device=``, directly or through one local binding. An op
        on tensors (``torch.cat([ref_v, prev_v], 2)`` of model outputs, STCN, held-out 171)
        lives where its inputs do: not certain."""
        if isinstance(value, ast.Name):
            bound = self.binding(value)
            value = bound if isinstance(bound, ast.expr) else value
        return (
            isinstance(value, ast.Call)
            and self.model.call_name(value) in HOST_CONSTRUCTORS
            and not any(k.arg == "device" for k in value.keywords)
            and method_name(value) not in {"to", "cuda"}
        )

    def on_device(self, node: ast.AST, depth: int, scalars: bool = True) -> bool:  # noqa: PLR0911, PLR0912
        """Whether ``node`` is visibly on the device; ``scalars``: a Python constant counts
        (DDP has nothing to move there), not where a tensor is required (``torch.f(x)``)."""
        if depth < 0:
            return False
        deeper = depth - 1
        if isinstance(node, ast.Constant):
            return scalars
        if isinstance(node, ast.Call):
            if any(k.arg == "device" for k in node.keywords):
                return True
            method = method_name(node)
            if method == "cuda" or (method == "to" and names_a_device(node)):
                return True
            if method in HOST_METHODS:
                return False
            if isinstance(node.func, ast.Attribute) and not self._is_module_function(node):
                return self.on_device(node.func.value, deeper, scalars=False)
            if scalars and isinstance(node.func, ast.Name):
                # ``m = adjust_momentum(epoch)``: this file's function returns a number
                if node.func.id in TensorNames(self.model).host_functions:
                    return True
            qualname = self.model.call_name(node)
            tensor_function = is_torch_tensor_function(qualname) or qualname in VARIABLE
            if tensor_function and node.args:
                return self.on_device(node.args[0], deeper, scalars=False)
            return self.returns_on_device(node, deeper)
        if isinstance(node, ast.Name):
            bound = self.binding(node)
            if isinstance(bound, ast.For | ast.AsyncFor | ast.comprehension):
                loader = _unwrap_enumerate(bound.iter)
                # A dataset that places its own samples (``TensorDataset(x.to(device))``)
                # yields batches already on the device, as an MpDeviceLoader does.
                return is_xla_loader(self.model, loader) or yields_device_batches(
                    self.model, loader
                )
            return bound is not None and self.on_device(bound, deeper, scalars)
        if isinstance(node, ast.Subscript):
            # ``images[0] = images[0].cuda(...)`` a few lines up
            stored = self.subscript_store(node)
            if stored is not None:
                return self.on_device(stored, deeper, scalars)
            if self.values_moved(node):
                return True
        if isinstance(node, ast.Subscript | ast.Attribute | ast.Starred):
            return self.on_device(node.value, deeper, scalars=False)
        if isinstance(node, ast.UnaryOp):
            return self.on_device(node.operand, deeper, scalars)
        if isinstance(node, ast.BinOp):
            parts = (node.left, node.right)
        elif isinstance(node, ast.IfExp):
            parts = (node.body, node.orelse)
        elif isinstance(node, ast.List | ast.Tuple):
            parts = tuple(node.elts)
        elif isinstance(node, ast.Dict):
            parts = tuple(node.values)
        elif isinstance(node, ast.ListComp | ast.GeneratorExp):
            parts = (node.elt,)
        elif isinstance(node, ast.DictComp):
            parts = (node.value,)
        else:
            return False
        if not all(self.on_device(p, deeper) for p in parts):
            return False
        # ``x * 2`` is a tensor on the device; ``(20, 10)`` is not a tensor at all.
        return scalars or any(self.on_device(p, deeper, scalars=False) for p in parts)

    def returns_on_device(self, call: ast.Call, depth: int) -> bool:
        """``X, Y = get_batch("train")`` with this file's ``get_batch`` returning
        ``x.to(device)``; ``y_hat = ddp_model(x)`` (its inputs are checked on their own)."""
        if isinstance(call.func, ast.Name):
            bound = self.binding(call.func)
            while isinstance(bound, ast.Call) and method_name(bound) in SELF_RETURNING:
                bound = bound.func.value  # type: ignore[attr-defined]
            if isinstance(bound, ast.Call) and self.model.call_name(bound) in DDP_NAMES:
                return True
        target = callee(self.model, call)
        if target is None or target[1] or depth < 0:
            return False
        returns = [r.value for r in self.model.walk_scope(target[0]) if isinstance(r, ast.Return)]
        return bool(returns) and all(
            r is not None and self.on_device(r, depth - 1, scalars=False) for r in returns
        )

    def subscript_store(self, node: ast.Subscript) -> ast.expr | None:
        scope = self.model.enclosing_function(node) or self.model.tree
        shown = self.model.segment(node)
        best: ast.Assign | None = None
        for stmt in scope_index(self.model, scope).binders:
            if (
                isinstance(stmt, ast.Assign)
                and stmt.lineno < node.lineno
                and any(
                    isinstance(t, ast.Subscript) and self.model.segment(t) == shown
                    for t in stmt.targets
                )
                and (best is None or stmt.lineno > best.lineno)
            ):
                best = stmt
        return best.value if best else None

    def values_moved(self, node: ast.Subscript) -> bool:
        """``data["rgb"]`` after ``for k, v in data.items(): data[k] = v.cuda()`` (under an
        ``if`` too) earlier in the scope: every value of ``data`` went to the device (XMem's
        trainer, held-out 47)."""
        container = self.model.segment(node.value)
        scope = self.model.enclosing_function(node) or self.model.tree
        for loop in scope_index(self.model, scope).binders:
            if not isinstance(loop, ast.For) or loop.lineno >= node.lineno:
                continue
            it = loop.iter
            if not (
                isinstance(it, ast.Call)
                and method_name(it) == "items"
                and self.model.segment(it.func.value) == container  # type: ignore[attr-defined]
                and isinstance(loop.target, ast.Tuple)
                and len(loop.target.elts) == 2
                and all(isinstance(e, ast.Name) for e in loop.target.elts)
            ):
                continue
            key, value = (e.id for e in loop.target.elts)  # type: ignore[attr-defined]
            for stmt in ast.walk(loop):
                if (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Subscript)
                    and self.model.segment(stmt.targets[0].value) == container
                    and isinstance(stmt.targets[0].slice, ast.Name)
                    and stmt.targets[0].slice.id == key
                    and isinstance(stmt.value, ast.Call)
                    and isinstance(stmt.value.func, ast.Attribute)
                    and isinstance(stmt.value.func.value, ast.Name)
                    and stmt.value.func.value.id == value
                    and (
                        method_name(stmt.value) == "cuda"
                        or (method_name(stmt.value) == "to" and names_a_device(stmt.value))
                    )
                ):
                    return True
        return False

    def _is_module_function(self, call: ast.Call) -> bool:
        """``torch.cat(...)``, ``F.pad(...)``, ``utils.prep(x)``: not a tensor method."""
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id in self.model.imports

    def binding(self, name: ast.Name) -> ast.AST | None:
        """The value the last binding of ``name`` before this use gives it in its scope
        (a loop for a loop target); None when the scope does not bind it."""
        scope = self.model.enclosing_function(name) or self.model.tree
        best: tuple[int, ast.AST] | None = None
        ancestors = set(self.model.ancestors(name))  # ``y = y.unsqueeze(1)``: the old y
        for node in scope_index(self.model, scope).binders:
            value: ast.AST | None = None
            inside = node in ancestors
            if isinstance(node, ast.Assign) and node.lineno <= name.lineno and not inside:
                for target in node.targets:
                    value = _value_for(target, node.value, name.id) or value
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                if name.id in _target_ids(node.target) and not _within(name, node.iter):
                    line = getattr(node, "lineno", None) or node.target.lineno
                    if line <= name.lineno:
                        value = node
            if value is not None:
                line = getattr(node, "lineno", None) or node.target.lineno  # type: ignore[union-attr]
                if best is None or line >= best[0]:
                    best = (line, value)
        return best[1] if best else None


@dataclass(frozen=True)
class _ScopeIndex:
    """One walk of a scope (``ast.walk`` order), shared by every DDP call and forward input
    traced in it: each question looks at its few candidates, not at every node again."""

    loads: dict[str, list[ast.Name]]  # each name's reads
    binders: list[ast.AST]  # assignments, ``for`` loops and comprehension clauses


def scope_index(model: ScriptModel, scope: ast.AST) -> _ScopeIndex:
    def compute() -> _ScopeIndex:
        index = _ScopeIndex({}, [])
        for n in model.walk(scope):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                index.loads.setdefault(n.id, []).append(n)
            elif isinstance(n, ast.Assign | ast.For | ast.AsyncFor | ast.comprehension):
                index.binders.append(n)
        return index

    return model.memo((scope_index, scope), compute)


def _value_for(target: ast.expr, value: ast.expr, name: str) -> ast.expr | None:
    if isinstance(target, ast.Name):
        return value if target.id == name else None
    if isinstance(target, ast.Tuple | ast.List):
        if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                found = _value_for(t, v, name)
                if found is not None:
                    return found
            return None
        if name in _target_ids(target):
            return value  # ``x, y = batch``: an unpacked on-device batch is on the device
    return None


def _within(node: ast.AST, root: ast.AST) -> bool:
    return any(n is node for n in ast.walk(root))


def _target_ids(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _unwrap_enumerate(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
        if node.func.id not in {"enumerate", "iter", "tqdm"}:
            break
        node = node.args[0]
    return node


def names_a_device(call: ast.Call) -> bool:
    """``x.to(device)``, ``.to(rank)``, ``.to(device, non_blocking=True)``, not ``.to(torch.float16)``."""
    if any(k.arg == "device" for k in call.keywords):
        return True
    if not call.args:
        return False
    first = call.args[0]
    if isinstance(first, ast.Attribute) and first.attr in DTYPES:
        return False
    return not (isinstance(first, ast.Name) and first.id in DTYPES)
