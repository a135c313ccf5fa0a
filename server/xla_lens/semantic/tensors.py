"""Which names and expressions hold XLA tensors, for rules about reading them on the host.

Static typing of a training script is out of reach, so this is a cautious heuristic:
a name is tensor-valued when its scope binds it from a model/criterion call, a ``torch.*``
function, a method/attribute/index of another tensor, or the for-target of a training loop
(the batch), or when it is conventionally named (``loss``, ``logits``, ``outputs``...) and not
visibly bound to a host value such as ``0.0`` or ``loss.item()``. Shared by XLA401 and XLA404.
"""

from __future__ import annotations

import ast
from collections.abc import Container, Iterator

from .model import SCOPE_TYPES, ScriptModel, TrainingLoop, method_name, receiver
from .node_helpers import dotted

# Methods that hand the value to Python: the point where XLA must run the graph.
HOST_METHODS = frozenset({"item", "tolist", "numpy", "cpu"})
# Methods and attributes of a tensor that are static metadata, not device data.
META_METHODS = frozenset(
    {
        "size",
        "dim",
        "numel",
        "nelement",
        "element_size",
        "get_device",
        "is_contiguous",
        "data_ptr",
        "keys",
    }
)
META_ATTRS = frozenset(
    {"shape", "dtype", "device", "ndim", "requires_grad", "is_leaf", "is_cuda", "layout", "names"}
)
CONVENTIONAL = frozenset({"loss", "logits", "outputs", "output", "preds", "pred", "predictions"})
CALLABLE_HINTS = ("model", "net", "criterion", "loss")
FACTORY_PREFIXES = ("get_", "build_", "create_", "make_", "load_", "init_")
RANGE_FUNCTIONS = frozenset({"range", "trange"})
COUNTERS = frozenset({"itertools.count", "tqdm.trange", "tqdm.auto.trange"})
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
HOST_BUILTINS = frozenset({"float", "int", "bool", "str", "len", "round", "repr", "format"})


def scope_of(model: ScriptModel, node: ast.AST) -> ast.AST:
    """The function, lambda or class whose frame runs ``node`` (the module at top level)."""
    # Asked for every node of every training loop by several rules: once per node.
    cache: dict[ast.AST, ast.AST] = model.memo(scope_of, dict)
    found = cache.get(node)
    if found is None:
        found = cache[node] = _scope_of(model, node)
    return found


def _for_loops_by_scope(model: ScriptModel) -> dict[ast.AST, list[ast.For | ast.AsyncFor]]:
    """The ``for`` training loops of each frame: every scope asks for its own, and a big
    script has as many scopes as loops."""

    def index() -> dict[ast.AST, list[ast.For | ast.AsyncFor]]:
        out: dict[ast.AST, list[ast.For | ast.AsyncFor]] = {}
        for loop in model.training_loops:
            if isinstance(loop.node, ast.For | ast.AsyncFor):
                out.setdefault(scope_of(model, loop.node), []).append(loop.node)
        return out

    return model.memo(_for_loops_by_scope, index)


def _scope_of(model: ScriptModel, node: ast.AST) -> ast.AST:
    for a in model.ancestors(node):
        if isinstance(a, SCOPE_TYPES):
            return a
    return model.tree


def loop_nodes(model: ScriptModel) -> Iterator[tuple[TrainingLoop, ast.AST]]:
    """Nodes a training loop runs every iteration, in its own frame or a step function's.

    Nested functions and lambdas written inside the loop are left out: they run whenever
    they are called (a step closure, a ``sort`` key), not necessarily in this step.
    """
    return iter(model.memo(loop_nodes, lambda: list(_loop_nodes(model))))


def _loop_nodes(model: ScriptModel) -> Iterator[tuple[TrainingLoop, ast.AST]]:
    for loop, node in model.nodes_in_training_loops():
        scope = scope_of(model, node)
        if scope is scope_of(model, loop.node) or scope in loop.step_functions:
            yield loop, node


def is_torch_tensor_function(qualname: str | None) -> bool:
    if qualname is None or not qualname.startswith("torch."):
        return False
    if qualname in NOT_TENSOR_TORCH or qualname.startswith(NOT_TENSOR_TORCH_PREFIXES):
        return False
    if qualname.startswith("torch.nn.") and not qualname.startswith("torch.nn.functional."):
        return False  # nn.Linear(...) builds a module, not a tensor
    return not qualname.rpartition(".")[2][:1].isupper()


def _identifier(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _target_names(target: ast.AST) -> list[str]:
    """What an assignment target binds: a name; ``self.loss`` as that dotted path (not
    ``self``: a tensor attribute does not make ``self.iter_num`` a tensor); for ``buf[i]`` the
    container (``buf`` holds a tensor now), not the index."""
    if isinstance(target, ast.Name):  # the common case
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for t in target.elts for n in _target_names(t)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Attribute):
        path = dotted(target)
        return [path] if path is not None else []
    if isinstance(target, ast.Subscript):
        return _target_names(target.value)
    return []


def _is_host_value(
    model: ScriptModel, value: ast.AST | None, host_functions: Container[str] = frozenset()
) -> bool:
    """Values visibly on the host: numbers, strings, ``x.item()``, ``float(x)``, or the
    result of a function of this script that never returns a tensor (``host_functions``)."""
    if value is None:
        return False
    if isinstance(value, ast.Constant | ast.JoinedStr):
        return True
    if isinstance(value, ast.Call):
        if method_name(value) in HOST_METHODS - {"cpu"}:
            return True
        if isinstance(value.func, ast.Name) and value.func.id in HOST_BUILTINS:
            return model.qualname(value.func) is None
        if isinstance(value.func, ast.Name) and value.func.id in host_functions:
            return True
        if _is_own_host_method(model, value, host_functions):
            return True
    if isinstance(value, ast.BinOp):
        return _is_host_value(model, value.left, host_functions) and _is_host_value(
            model, value.right, host_functions
        )
    return False


def _class_of(model: ScriptModel, node: ast.AST) -> ast.ClassDef | None:
    for a in model.ancestors(node):
        if isinstance(a, ast.ClassDef):
            return a
    return None


def _is_own_host_method(model: ScriptModel, call: ast.Call, host_functions: Container[str]) -> bool:
    """``self.run_batch(x)`` where ``run_batch`` is a method of the calling class that
    returns host values (``return loss.item()``): its result is a Python number."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and func.attr in host_functions
    ):
        return False
    # ``functions`` keeps one def per name: only trust it when it is this class's method.
    method = model.functions.get(func.attr)
    cls = model.parent(method) if method is not None else None
    return isinstance(cls, ast.ClassDef) and cls is _class_of(model, call)


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
        if ident[:1].isupper() or ident.startswith(FACTORY_PREFIXES):
            return False
        if isinstance(call.func, ast.Name) and ident in self.model.functions:
            return False
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
            for name in _target_names(t):
                bindings.setdefault(name, []).append(v)
        found = self._assignments[id(scope)] = (pairs, bindings)
        return found

    def _compute(self, scope: ast.AST, host_fns: Container[str]) -> frozenset[str]:
        model = self.model
        pairs, bindings = self._assignments_of(scope)
        names: set[str] = set()
        for loop in _for_loops_by_scope(model).get(scope, ()):
            names.update(_batch_names(model, loop))

        def host(value: ast.AST | None, depth: int = 0) -> bool:
            # ``best_loss = test_loss`` is a host value when ``test_loss`` is one.
            if isinstance(value, ast.Name) and depth < 3 and bindings.get(value.id):
                return all(host(v, depth + 1) for v in bindings[value.id])
            return _is_host_value(model, value, host_fns)

        for name in CONVENTIONAL | {b for b in bindings if b.endswith(("_loss", "_logits"))}:
            values = bindings.get(name)
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
        return _target_names(target) if self._is_tensor(value, names) else []

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


def _is_counter(model: ScriptModel, call: ast.Call) -> bool:
    if model.call_name(call) in COUNTERS:
        return True
    return isinstance(call.func, ast.Name) and call.func.id in RANGE_FUNCTIONS


def _batch_names(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> list[str]:
    """Names the loop binds to data from a loader (not ``enumerate``'s index, not ``range``)."""
    it, target = loop.iter, loop.target
    if isinstance(it, ast.List | ast.Tuple | ast.Constant):
        return []
    if any(isinstance(n, ast.Call) and _is_counter(model, n) for n in model.walk(it)):
        return []  # ``tqdm(range(n))``, ``itertools.count()``: step counters, not data
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "enumerate"
        and isinstance(target, ast.Tuple)
        and target.elts
    ):
        return [n for t in target.elts[1:] for n in _target_names(t)]
    return _target_names(target)
