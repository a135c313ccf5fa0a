"""Whether dropping DDP's ``device_ids`` keeps every forward input on the device.

``DistributedDataParallel(model, device_ids=[rank])`` moves the tensors of each forward
call onto ``device_ids[0]``; ``DDP(model)`` does not. So ``ddp_model(torch.randn(20, 10))``
works with ``device_ids`` and, without them, hands a CPU tensor to an XLA model ("Expected
XLA tensor. Got: torch.FloatTensor"). Dropping them is safe only when every call of the
wrapped model, as far as this file shows, passes inputs that are visibly on the device:
``.to(device)``, ``.cuda()`` (XLA101 rewrites it), built with ``device=...``, or the batch
of an ``MpDeviceLoader``. Anything else — a plain DataLoader batch, a parameter, a model
handed to a function of another module — is a reason to review.

This module follows the DDP model to its forward calls; whether each input is visibly on
the device is ``ddp_input_placement.py``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...semantic.calls import callee, enclosing_class
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, const_str, method_name
from .ddp_input_placement import (
    DDP_NAMES,
    SELF_RETURNING,
    InputPlacement,
    names_a_device,
    scope_index,
)
from .workspace_module_uses import never_runs_forward

MAX_DEPTH = 4  # functions followed from the DDP binding
VALUE_DEPTH = 10  # expression steps followed back from a forward input
# Calls that look at the wrapped model without running its forward.
HARMLESS = frozenset(
    {"print", "isinstance", "hasattr", "getattr", "type", "id", "len", "str", "repr", "vars"}
)


@dataclass(frozen=True)
class CpuInput:
    """Why the drop is not safe: ``line`` shows it, ``reason`` says it."""

    line: int
    reason: str
    forward: ast.Call | None = None  # a forward call whose input is certainly on the CPU
    value: ast.expr | None = None  # that input


def unmoved_input(
    model: ScriptModel, ddp_call: ast.Call, mover: str = "DDP with device_ids"
) -> CpuInput | None:
    """None when every forward call of the wrapper's result passes on-device inputs.
    ``mover`` names what moved the inputs before (for the reason)."""
    return _Tracer(model, mover).result_uses(ddp_call, MAX_DEPTH)


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
        if method_name(module) == "to" and names_a_device(module):
            device = (
                module.args[0]
                if module.args
                else next(k.value for k in module.keywords if k.arg == "device")
            )
            text = const_str(device)
            return None if text is not None and text.startswith("cpu") else device
        module = module.func.value  # type: ignore[attr-defined]
    return None


class _Tracer(InputPlacement):
    """Follows the DDP model from its binding to every forward call and checks its inputs."""

    def __init__(self, model: ScriptModel, mover: str = "DDP with device_ids") -> None:
        super().__init__(model)
        self.seen: set[tuple[ast.AST, str]] = set()
        self.mover = mover

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
            f"the DDP model at line {line_ref(node.lineno)} is not bound to a name this file follows",
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
            for n in scope_index(self.model, scope).loads.get(name, ())
            if (n.lineno, n.col_offset) >= after
        ]
        return self.each_use(uses, depth)

    def each_use(self, uses: list[ast.expr], depth: int) -> CpuInput | None:
        """The first input certainly on the CPU, else the first not visibly on the device:
        the reason names what surely breaks before what may (held-out 47: XMem's CPU
        ``hidden`` state, not the batch moved in a loop over its dict)."""
        first = None
        for use in uses:
            found = self.use(use, depth)
            if found is not None and found.forward is not None:
                return found
            first = first or found
        return first

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
        if isinstance(parent, ast.Return) and parent.value is use:
            return self.returned(use, name, depth)
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
            f"line {line_ref(use.lineno)} hands `{name}` on where xla-lens cannot follow its forward calls",
        )

    def returned(self, use: ast.expr, name: str, depth: int) -> CpuInput | None:
        """``return net`` from a helper that wraps it: the helper's calls in this file."""
        fn = self.model.enclosing_function(use)
        if fn is None or depth <= 0:
            return self.lost(use, name)
        calls = [
            c for c in self.model.calls if (t := callee(self.model, c)) is not None and t[0] is fn
        ]
        if not calls:
            return self.lost(use, name)
        for call in calls:
            found = self.result_uses(call, depth - 1)
            if found is not None:
                return found
        return None

    def passed(self, call: ast.Call, use: ast.expr, name: str, depth: int) -> CpuInput | None:
        if isinstance(call.func, ast.Name) and call.func.id in HARMLESS:
            return None
        if self.model.call_name(call) in DDP_NAMES and depth > 0:
            return self.result_uses(call, depth - 1)  # wrapped again (another branch)
        target = callee(self.model, call)
        param = _parameter(target, call, use) if target is not None else None
        if target is None and never_runs_forward(self.model, call, use):
            return None  # ``save_model(args, model, opt)`` of model.py: state dicts only
        if target is None or param is None or depth <= 0:
            shown = self.model.segment(call.func)
            return CpuInput(
                use.lineno,
                f"line {line_ref(use.lineno)} passes `{name}` to `{shown}`, whose forward calls "
                "this file does not show",
            )
        return self.name_uses(param, target[0], (target[0].lineno, 0), depth - 1)

    def forward(self, call: ast.Call) -> CpuInput | None:
        values = [
            v.value if isinstance(v, ast.Starred) else v
            for v in (*call.args, *(k.value for k in call.keywords))
        ]
        # A certain CPU tensor first: it surely breaks, an unsure input only may.
        values.sort(key=lambda v: not self.certainly_cpu(v))
        for value in values:
            if not self.on_device(value, VALUE_DEPTH):
                shown = self.model.segment(value)
                certain = self.certainly_cpu(value)
                # Unsure: it may hold strings (a caption batch), which .to() would break on.
                what = (
                    f"a CPU tensor (`{shown}`): move it with .to(device)"
                    if certain
                    else f"an input not visibly on the device (`{shown}`): if it holds "
                    "tensors, move them with .to(device)"
                )
                return CpuInput(
                    value.lineno,
                    f"{self.mover} moved the inputs to the device; without it line "
                    f"{line_ref(value.lineno)} passes {what}",
                    call if certain else None,
                    value if certain else None,
                )
        return None


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
