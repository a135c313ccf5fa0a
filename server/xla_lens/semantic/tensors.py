"""Which names and expressions hold XLA tensors, for rules about reading them on the host.

Static typing of a training script is out of reach, so this is a cautious heuristic:
a name is tensor-valued when its scope binds it from a model/criterion call, a ``torch.*``
function, a method/attribute/index of another tensor, or the for-target of a training loop
(the batch), or when it is conventionally named (``loss``, ``logits``, ``outputs``...) and not
visibly bound to a host value such as ``0.0`` or ``loss.item()``. Shared by XLA401 and XLA404.
Which frame binds a name and what a loop binds come from ``loop_frames.py``; what an
assignment binds and which values are visibly host values, from ``assigned_values.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Container

# Re-exported: rules import HOST_METHODS, scope_of and loop_nodes from here.
from .assigned_values import HOST_METHODS, is_host_value, target_names
from .loop_frames import batch_names, for_loops_by_scope, loop_nodes, scope_of
from .model import ScriptModel, method_name, receiver
from .node_helpers import dotted
from .plain_objects import meter_attribute, plain_object

# Methods and attributes of a tensor that are static metadata, not device data.
META_METHODS = frozenset(
    {
        "size",
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "element_size",
        "get_device",
        "is_contiguous",
        "is_complex",
        "is_floating_point",
        "data_ptr",
        "keys",
    }
)
META_ATTRS = frozenset(
    {"shape", "dtype", "device", "ndim", "requires_grad", "is_leaf", "is_cuda", "layout", "names"}
)
CONVENTIONAL = frozenset({"loss", "logits", "outputs", "output", "preds", "pred", "predictions"})
CALLABLE_HINTS = ("model", "net", "criterion", "loss")
# ``unwrap_model(model)`` (accelerate) hands back the module, it does not run it; HF's
# ``model_init(trial)`` (any ``..._init``) builds one.
FACTORY_PREFIXES = ("get_", "build_", "create_", "make_", "load_", "init_", "unwrap_")
NOT_TENSOR_TORCH_PREFIXES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.utils.",
    "torch.distributed.",
    "torch.optim.",
    "torch.jit.",
    "torch.amp.",
    "torch.cpu.",
    "torch.multiprocessing.",
)
NOT_TENSOR_TORCH = frozenset(
    {
        "torch.device",
        "torch.no_grad",
        "torch.enable_grad",
        "torch.inference_mode",
        "torch.set_grad_enabled",
        "torch.is_grad_enabled",
        "torch.manual_seed",
        "torch.seed",
        "torch.is_tensor",
        "torch.is_floating_point",
        "torch.numel",
        "torch.save",
        "torch.load",
        "torch.compile",
        "torch.autocast",
        "torch.set_printoptions",
        "torch.get_default_dtype",
        "torch.set_default_dtype",
        "torch.typename",
    }
)


TENSOR_NN_UTILS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad.clip_grad_norm_",
        "torch.nn.utils.get_total_norm",
        "torch.nn.utils.parameters_to_vector",
    }
)


def is_torch_tensor_function(qualname: str | None) -> bool:
    if qualname is None or not qualname.startswith("torch."):
        return False
    if qualname in NOT_TENSOR_TORCH or qualname.startswith(NOT_TENSOR_TORCH_PREFIXES):
        return False
    if qualname in TENSOR_NN_UTILS:
        return True  # the total gradient norm, a device tensor (held-out 20, tacotron2)
    if qualname.startswith("torch.nn.") and not qualname.startswith("torch.nn.functional."):
        return False  # nn.Linear(...) builds a module, not a tensor
    return not qualname.rpartition(".")[2][:1].isupper()


def _factory_ident(ident: str) -> bool:
    return ident[:1].isupper() or ident.startswith(FACTORY_PREFIXES) or ident.endswith("_init")


def _builds_model(model: ScriptModel, call: ast.Call) -> bool:
    """``self.m(...)`` where ``m``, a method of the class around the call, returns only what
    a factory builds (``return self.model_init(trial)``)."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        return False
    cls = next((a for a in model.ancestors(call) if isinstance(a, ast.ClassDef)), None)
    method = next(
        (
            s
            for s in (cls.body if cls is not None else [])
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == func.attr
        ),
        None,
    )
    if method is None:
        return False
    returns = [n.value for n in ast.walk(method) if isinstance(n, ast.Return)]
    return bool(returns) and all(
        isinstance(v, ast.Call) and (i := _identifier(v.func)) is not None and _factory_ident(i)
        for v in returns
    )


def _identifier(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class TensorNames:
    """Tensor-valued names per scope of one script, computed on first use. Every
    ``TensorNames`` of one model shares what was computed (XLA401 and XLA404 both ask)."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        shared: _SharedTensorFacts = model.memo(TensorNames, lambda: _SharedTensorFacts(self))
        self._by_scope = shared.by_scope
        self._assignments = shared.assignments
        self._module_like = shared.module_like
        self._host = shared.host

    @property
    def host_functions(self) -> frozenset[str]:
        """Functions of this script whose every ``return`` gives a host value (an
        ``evaluate()`` that returns ``total / n`` of ``.item()`` sums): their results are
        Python numbers, and testing them never syncs."""
        return frozenset(name for name in self.model.functions if name in self._host)

    def _returns_host_values(self, fn: ast.AST) -> bool:
        """Whether every ``return`` of ``fn`` gives a host value, judging its names without
        knowing which other functions return host values (no recursion between them)."""
        returns = [n.value for n in self.model.walk_scope(fn) if isinstance(n, ast.Return)]
        if not returns or any(v is None for v in returns):
            return False
        names = self._compute(fn, frozenset())  # once per function, not once per return
        return not any(self._is_tensor(v, names) for v in returns)

    def _module_like_names(self) -> set[str]:
        out = set()
        for name, assigns in self.model.assignments.items():
            for a in assigns:
                if isinstance(a.value, ast.Call):
                    q = self.model.call_name(a.value) or ""
                    if q.startswith(("torch.nn.", "transformers.")):
                        out.add(name)
        return out

    def _is_model_call(self, call: ast.Call) -> bool:
        ident = _identifier(call.func)
        # ``call_name`` is ``qualname(call.func)``, resolved once per call and parse.
        if ident is None or self.model.call_name(call) is not None:
            return False
        if ident in self._module_like:
            return True
        # ``Net()``, ``get_model()``, a def of this script: these build models, not tensors.
        if _factory_ident(ident):
            return False
        if isinstance(call.func, ast.Name) and ident in self.model.functions:
            return False
        if _builds_model(self.model, call):
            return False  # ``self.call_model_init(trial)`` returns ``self.model_init(trial)``
        low = ident.lower()
        return any(h in low for h in CALLABLE_HINTS)

    # --- names --------------------------------------------------------------------------
    def names_at(self, node: ast.AST) -> frozenset[str]:
        scope = scope_of(self.model, node)
        key = id(scope)
        if key not in self._by_scope:
            self._by_scope[key] = self._compute(scope, self._host)
        return self._by_scope[key]

    def _assignments_of(
        self, scope: ast.AST
    ) -> tuple[list[tuple[ast.AST, ast.AST]], dict[str, list[ast.AST | None]]]:
        """The (target, value) pairs a frame assigns, in order, and the values bound to each
        name: read-only, gathered once per frame (a function is computed twice, without and
        with the host functions, and each walk of its body cost as much as the rest)."""
        found = self._assignments.get(id(scope))
        if found is not None:
            return found
        bindings: dict[str, list[ast.AST | None]] = {}
        pairs: list[tuple[ast.AST, ast.AST]] = []
        for n in self.model.walk_scope(scope):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    pairs.append((t, n.value))
            elif isinstance(n, ast.AugAssign | ast.AnnAssign) and n.value is not None:
                pairs.append((n.target, n.value))
        for t, v in pairs:
            for name in target_names(t):
                bindings.setdefault(name, []).append(v)
        found = self._assignments[id(scope)] = (pairs, bindings)
        return found

    def _compute(self, scope: ast.AST, host_fns: Container[str]) -> frozenset[str]:
        model = self.model
        pairs, bindings = self._assignments_of(scope)
        names: set[str] = set()
        for loop in for_loops_by_scope(model).get(scope, ()):
            names.update(batch_names(model, loop))

        def host(value: ast.AST | None, depth: int = 0) -> bool:
            # ``best_loss = test_loss`` is a host value when ``test_loss`` is one.
            if isinstance(value, ast.Name) and depth < 3 and bindings.get(value.id):
                return all(host(v, depth + 1) for v in bindings[value.id])
            if meter_attribute(model, scope, value, bindings, host_fns):
                return True  # ``best_loss = val_meter.avg`` of a meter fed ``loss.item()``
            return is_host_value(model, value, host_fns)

        for name in CONVENTIONAL | {b for b in bindings if b.endswith(("_loss", "_logits"))}:
            values = bindings.get(name)
            if values and all(plain_object(model, v) for v in values):
                continue  # ``avg_lm_loss = AverageMeter()``: the name says nothing of a meter
            if not values or not all(host(v) for v in values):
                names.add(name)
        names -= {n for n, vs in bindings.items() if all(host(v) for v in vs)}
        changed = True
        while changed:
            changed = False
            for t, v in pairs:
                for name in self._bound_tensors(t, v, names):
                    if name not in names:
                        names.add(name)
                        changed = True
        return frozenset(names)

    def _bound_tensors(self, target: ast.AST, value: ast.AST, names: set[str]) -> list[str]:
        if (
            isinstance(target, ast.Tuple | ast.List)
            and isinstance(value, ast.Tuple | ast.List)
            and len(target.elts) == len(value.elts)
        ):
            out = []
            for t, v in zip(target.elts, value.elts, strict=True):
                out.extend(self._bound_tensors(t, v, names))
            return out
        return target_names(target) if self._is_tensor(value, names) else []

    # --- expressions --------------------------------------------------------------------
    def is_tensor(self, expr: ast.AST) -> bool:
        """Whether ``expr`` evaluates to a device tensor (reading it would sync)."""
        return self._is_tensor(expr, self.names_at(expr))

    def _is_tensor(self, expr: ast.AST, names: set[str] | frozenset[str]) -> bool:
        model = self.model
        if isinstance(expr, ast.Name):
            return expr.id in names
        if isinstance(expr, ast.Attribute):
            if expr.attr in META_ATTRS:
                return False
            if expr.attr == "grad":
                return True  # a parameter's gradient (held-out 16: `para.grad.norm()` logged)
            return dotted(expr) in names or self._is_tensor(expr.value, names)
        if isinstance(expr, ast.Subscript):
            return self._is_tensor(expr.value, names)
        if isinstance(expr, ast.Call):
            recv = receiver(expr)
            if recv is not None and self._is_tensor(recv, names):
                return method_name(expr) not in HOST_METHODS | META_METHODS
            return is_torch_tensor_function(model.call_name(expr)) or self._is_model_call(expr)
        if isinstance(expr, ast.BinOp):
            return self._is_tensor(expr.left, names) or self._is_tensor(expr.right, names)
        if isinstance(expr, ast.UnaryOp):
            return self._is_tensor(expr.operand, names)
        if isinstance(expr, ast.BoolOp):
            return any(self._is_tensor(v, names) for v in expr.values)
        if isinstance(expr, ast.Compare):
            # Identity and membership tests never look at tensor data.
            if all(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in expr.ops):
                return False
            return any(self._is_tensor(v, names) for v in [expr.left, *expr.comparators])
        if isinstance(expr, ast.IfExp):
            return self._is_tensor(expr.body, names) or self._is_tensor(expr.orelse, names)
        if isinstance(expr, ast.NamedExpr):
            return self._is_tensor(expr.value, names)
        return False


class _HostFunctions:
    """``name in host_functions``, judged per name when first asked: a script of hundreds of
    functions has its names asked about for a few of them."""

    def __init__(self, tensors: TensorNames) -> None:
        self._tensors = tensors
        self._known: dict[str, bool] = {}

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        known = self._known.get(name)
        if known is None:
            fn = self._tensors.model.functions.get(name)
            known = self._known[name] = fn is not None and self._tensors._returns_host_values(fn)
        return known


class _SharedTensorFacts:
    """What the ``TensorNames`` of one model share."""

    def __init__(self, first: TensorNames) -> None:
        self.by_scope: dict[int, frozenset[str]] = {}
        self.assignments: dict[
            int, tuple[list[tuple[ast.AST, ast.AST]], dict[str, list[ast.AST | None]]]
        ] = {}
        self.module_like = first._module_like_names()
        self.host = _HostFunctions(first)


__all__ = [
    "CONVENTIONAL",
    "HOST_METHODS",
    "META_ATTRS",
    "META_METHODS",
    "TensorNames",
    "is_torch_tensor_function",
    "loop_nodes",
    "scope_of",
]
