"""Whether dropping DDP's ``device_ids`` keeps every forward input on the device.

``DistributedDataParallel(model, device_ids=[rank])`` moves the tensors of each forward
call onto ``device_ids[0]``; ``DDP(model)`` does not. So ``ddp_model(torch.randn(20, 10))``
works with ``device_ids`` and, without them, hands a CPU tensor to an XLA model ("Expected
XLA tensor. Got: torch.FloatTensor"). Dropping them is safe only when every call of the
wrapped model, as far as this file shows, passes inputs that are visibly on the device:
``.to(device)``, ``.cuda()`` (XLA101 rewrites it), built with ``device=...``, or the batch
of an ``MpDeviceLoader``. Anything else — a plain DataLoader batch, a parameter, a model
handed to a function of another module — is a reason to review.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...semantic.calls import callee, enclosing_class
from ...semantic.loaders import is_xla_loader
from ...semantic.model import ScriptModel, const_str, method_name
from ...semantic.tensors import TensorNames, is_torch_tensor_function

MAX_DEPTH = 4  # functions followed from the DDP binding
VALUE_DEPTH = 10  # expression steps followed back from a forward input
# Calls that look at the wrapped model without running its forward.
HARMLESS = frozenset(
    {"print", "isinstance", "hasattr", "getattr", "type", "id", "len", "str", "repr", "vars"}
)
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


@dataclass(frozen=True)
class CpuInput:
    """Why the drop is not safe: ``line`` shows it, ``reason`` says it."""

    line: int
    reason: str
    forward: ast.Call | None = None  # a forward call whose input is certainly on the CPU
    value: ast.expr | None = None  # that input


def unmoved_input(model: ScriptModel, ddp_call: ast.Call) -> CpuInput | None:
    """None when every forward call of the DDP result passes on-device inputs."""
    return _Tracer(model).result_uses(ddp_call, MAX_DEPTH)


def module_device(model: ScriptModel, ddp_call: ast.Call) -> ast.expr | None:
    """The device the wrapped module was moved to: ``DDP(Net().to(dev))`` or
    ``m = Net().to(dev); DDP(m)`` gives ``dev``; None when not visible or the CPU."""
    if not ddp_call.args:
        return None
    module: ast.AST | None = ddp_call.args[0]
    for _ in range(VALUE_DEPTH):
        if isinstance(module, ast.Name):
            module = _Tracer(model).binding(module)
            continue
        if not isinstance(module, ast.Call) or method_name(module) not in SELF_RETURNING:
            return None
        if method_name(module) == "to" and _names_a_device(module):
            device = (
                module.args[0]
                if module.args
                else next(k.value for k in module.keywords if k.arg == "device")
            )
            text = const_str(device)
            return None if text is not None and text.startswith("cpu") else device
        module = module.func.value  # type: ignore[attr-defined]
    return None


class _Tracer:
    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self.seen: set[tuple[ast.AST, str]] = set()

    def result_uses(self, node: ast.expr, depth: int) -> CpuInput | None:
        parent = self.model.parent(node)
        # ``DDP(...).to(device)`` / ``.cuda()`` / ``x if c else DDP(...)``: the same module.
        while True:
            if isinstance(parent, ast.IfExp | ast.BoolOp):
                node, parent = parent, self.model.parent(parent)  # type: ignore[assignment]
                continue
            call = self.model.parent(parent) if isinstance(parent, ast.Attribute) else None
            if isinstance(call, ast.Call) and call.func is parent and parent.attr in SELF_RETURNING:
                node, parent = call, self.model.parent(call)
                continue
            break
        if isinstance(parent, ast.Assign | ast.AnnAssign) and parent.value is node:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            for target in targets:
                found = self.target_uses(target, node, depth)
                if found is not None:
                    return found
            return None
        if isinstance(parent, ast.Attribute | ast.Call):  # ``(ddp if c else m).state_dict()``
            return self.use(node, depth)
        return CpuInput(
            node.lineno,
            f"the DDP model at line {node.lineno} is not bound to a name this file follows",
        )

    def target_uses(self, target: ast.expr, node: ast.expr, depth: int) -> CpuInput | None:
        if isinstance(target, ast.Name):
            scope = self.model.enclosing_function(node) or self.model.tree
            statement = self.model.enclosing_statement(node) or node
            after = (statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
            return self.name_uses(target.id, scope, after, depth)
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            cls = enclosing_class(self.model, target)
            if cls is not None:
                uses = [
                    n
                    for n in ast.walk(cls)
                    if isinstance(n, ast.Attribute)
                    and n.attr == target.attr
                    and isinstance(n.value, ast.Name)
                    and n.value.id == "self"
                    and isinstance(n.ctx, ast.Load)
                ]
                return self.each_use(uses, depth)
        return CpuInput(node.lineno, f"`{self.model.segment(target)}` is not followed")

    def name_uses(
        self, name: str, scope: ast.AST, after: tuple[int, int], depth: int
    ) -> CpuInput | None:
        if (scope, name) in self.seen:
            return None
        self.seen.add((scope, name))
        uses = [
            n
            for n in _scope_index(self.model, scope).loads.get(name, ())
            if (n.lineno, n.col_offset) >= after
        ]
        return self.each_use(uses, depth)

    def each_use(self, uses: list[ast.expr], depth: int) -> CpuInput | None:
        for use in uses:
            found = self.use(use, depth)
            if found is not None:
                return found
        return None

    def use(self, use: ast.expr, depth: int) -> CpuInput | None:
        parent = self.model.parent(use)
        name = self.model.segment(use)
        if isinstance(parent, ast.Call) and parent.func is use:
            return self.forward(parent)
        if isinstance(parent, ast.Attribute):
            call = self.model.parent(parent)
            if parent.attr in {"forward", "__call__"} and isinstance(call, ast.Call):
                return self.forward(call)
            return None  # .parameters(), .module, .train(), .no_sync(), .state_dict()...
        if isinstance(parent, ast.Call):
            return self.passed(parent, use, name, depth)
        if isinstance(parent, ast.Assign) and parent.value is use:
            return self.result_uses(use, depth - 1) if depth > 0 else self.lost(use, name)
        # ``m = ddp if c else other`` / ``ddp or other``: the value may be the DDP model.
        branch = isinstance(parent, ast.IfExp) and use is not parent.test
        if branch or isinstance(parent, ast.BoolOp):
            return self.result_uses(use, depth - 1) if depth > 0 else self.lost(use, name)
        if isinstance(parent, ast.Compare | ast.BoolOp | ast.If | ast.IfExp | ast.UnaryOp):
            return None
        return self.lost(use, name)

    def lost(self, use: ast.expr, name: str) -> CpuInput:
        return CpuInput(
            use.lineno,
            f"line {use.lineno} hands `{name}` on where xla-lens cannot follow its forward calls",
        )

    def passed(self, call: ast.Call, use: ast.expr, name: str, depth: int) -> CpuInput | None:
        if isinstance(call.func, ast.Name) and call.func.id in HARMLESS:
            return None
        if self.model.call_name(call) in DDP_NAMES and depth > 0:
            return self.result_uses(call, depth - 1)  # wrapped again (another branch)
        target = callee(self.model, call)
        param = _parameter(target, call, use) if target is not None else None
        if target is None or param is None or depth <= 0:
            shown = self.model.segment(call.func)
            return CpuInput(
                use.lineno,
                f"line {use.lineno} passes `{name}` to `{shown}`, whose forward calls "
                "this file does not show",
            )
        return self.name_uses(param, target[0], (target[0].lineno, 0), depth - 1)

    def forward(self, call: ast.Call) -> CpuInput | None:
        values = [*call.args, *(k.value for k in call.keywords)]
        for value in values:
            if isinstance(value, ast.Starred):
                value = value.value
            if not self.on_device(value, VALUE_DEPTH):
                shown = self.model.segment(value)
                certain = self.certainly_cpu(value)
                kind = "a CPU tensor" if certain else "an input not visibly on the device"
                return CpuInput(
                    value.lineno,
                    f"DDP with device_ids moved the inputs to the device; without it line "
                    f"{value.lineno} passes {kind} (`{shown}`): move it with .to(device)",
                    call if certain else None,
                    value if certain else None,
                )
        return None

    def certainly_cpu(self, value: ast.expr) -> bool:
        """A torch factory without ``device=``, directly or through one local binding."""
        if isinstance(value, ast.Name):
            bound = self.binding(value)
            value = bound if isinstance(bound, ast.expr) else value
        return (
            isinstance(value, ast.Call)
            and is_torch_tensor_function(self.model.call_name(value))
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
            if method == "cuda" or (method == "to" and _names_a_device(node)):
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
                return is_xla_loader(self.model, _unwrap_enumerate(bound.iter))
            return bound is not None and self.on_device(bound, deeper, scalars)
        if isinstance(node, ast.Subscript):
            # ``images[0] = images[0].cuda(...)`` a few lines up
            stored = self.subscript_store(node)
            if stored is not None:
                return self.on_device(stored, deeper, scalars)
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
        for stmt in _scope_index(self.model, scope).binders:
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
        for node in _scope_index(self.model, scope).binders:
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


def _scope_index(model: ScriptModel, scope: ast.AST) -> _ScopeIndex:
    def compute() -> _ScopeIndex:
        index = _ScopeIndex({}, [])
        for n in model.walk(scope):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                index.loads.setdefault(n.id, []).append(n)
            elif isinstance(n, ast.Assign | ast.For | ast.AsyncFor | ast.comprehension):
                index.binders.append(n)
        return index

    return model.memo((_scope_index, scope), compute)


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


def _names_a_device(call: ast.Call) -> bool:
    """``x.to(device)``, ``.to(rank)``, ``.to(device, non_blocking=True)``, not ``.to(torch.float16)``."""
    if any(k.arg == "device" for k in call.keywords):
        return True
    if not call.args:
        return False
    first = call.args[0]
    if isinstance(first, ast.Attribute) and first.attr in DTYPES:
        return False
    return not (isinstance(first, ast.Name) and first.id in DTYPES)


def _parameter(target: tuple[ast.AST, bool], call: ast.Call, use: ast.expr) -> str | None:
    fn, implicit_self = target
    params = [*fn.args.posonlyargs, *fn.args.args]  # type: ignore[attr-defined]
    if implicit_self:
        params = params[1:]
    for i, arg in enumerate(call.args):
        if arg is use:
            return params[i].arg if i < len(params) else None
    for kw in call.keywords:
        if kw.value is use and kw.arg is not None:
            return kw.arg
    return None
