"""XLA205: the NCCL process group and the DistributedDataParallel wrapper.

NCCL exists only for CUDA tensors; torch.distributed on XLA devices goes through the
``xla`` backend (registered by importing ``torch_xla.distributed.xla_backend``). The DDP
wrapper's gradient all-reduce is what ``xm.optimizer_step`` / ``xm.reduce_gradients``
already do on XLA, so the model is used unwrapped.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.model import ScriptModel, arg_or_keyword, const_str, dotted
from .base import (
    AddImport,
    Category,
    EditOp,
    Finding,
    Fix,
    RemoveStatement,
    Replace,
    Rule,
    RuleContext,
    SetKeyword,
    Severity,
)

CODE = "XLA205"
INIT = "torch.distributed.init_process_group"
DDP = {
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
}
XLA_BACKEND_IMPORT = "import torch_xla.distributed.xla_backend"
# Attributes that exist only on the DDP wrapper: unwrapping would break them.
DDP_ONLY = {"module", "no_sync", "require_backward_grad_sync"}


def _init_finding(model: ScriptModel, call: ast.Call, ctx: RuleContext) -> Finding | None:
    backend = arg_or_keyword(call, 0, "backend")
    if const_str(backend) != "nccl":
        return None
    assert backend is not None
    quote = model.segment(backend)[0] if model.segment(backend)[:1] in {"'", '"'} else '"'
    ops: list[EditOp] = [Replace(model.span(backend), f"{quote}xla{quote}")]
    if ctx.target == "modern" and arg_or_keyword(call, 1, "init_method") is None:
        ops.append(SetKeyword(model.span(call), "init_method", f"{quote}xla://{quote}"))
    ops.append(AddImport(XLA_BACKEND_IMPORT))
    return Finding(
        CODE,
        'NCCL is CUDA-only: on XLA devices torch.distributed uses the "xla" backend',
        model.span(backend),
        Severity.WARNING,
        fix=Fix('Use the "xla" backend', tuple(ops)),
    )


def _wrapper_names(model: ScriptModel, call: ast.Call) -> set[str]:
    """The names (``model``, ``self.model``) the DDP wrapper is assigned to."""
    parent = model.parent(call)
    targets: list[ast.expr] = []
    if isinstance(parent, ast.Assign) and parent.value is call:
        targets = list(parent.targets)
    elif isinstance(parent, ast.AnnAssign | ast.NamedExpr) and parent.value is call:
        targets = [parent.target]
    return {n for n in (dotted(t) for t in targets) if n is not None}


def _wrapper_uses(model: ScriptModel, names: set[str]) -> list[ast.Attribute]:
    """``ddp.module`` / ``ddp.no_sync`` / ... read anywhere through the wrapper's names."""
    return [
        n
        for n in model.nodes_of(ast.Attribute)
        if isinstance(n, ast.Attribute) and n.attr in DDP_ONLY and dotted(n.value) in names
    ]


def _ddp_finding(model: ScriptModel, call: ast.Call) -> Finding:
    message = (
        "DistributedDataParallel is not needed on XLA: xm.optimizer_step / "
        "xm.reduce_gradients all-reduce the gradients across replicas"
    )
    inner = arg_or_keyword(call, 0, "module")
    if inner is None:
        return Finding(
            CODE, message, model.span(call), Severity.WARNING, manual="use the model unwrapped"
        )
    names = _wrapper_names(model, call)
    inner_code = model.segment(inner)
    parent = model.parent(call)
    if names == {inner_code} and isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        # model = DDP(model): unwrapped, the assignment is a no-op.
        op: RemoveStatement | Replace = RemoveStatement(model.span(parent))
    else:
        op = Replace(model.span(call), inner_code)
    title = f"Unwrap: use {inner_code}"
    uses = _wrapper_uses(model, names)
    if not uses:
        return Finding(CODE, message, model.span(call), Severity.WARNING, fix=Fix(title, (op,)))
    shown = ", ".join(sorted({model.segment(u) for u in uses}))
    manual = f"use the model unwrapped and replace {shown} by the model itself"
    if any(u.attr != "module" for u in uses):
        # no_sync() and friends change the step's structure: nothing to rewrite mechanically.
        return Finding(CODE, message, model.span(call), Severity.WARNING, manual=manual)
    # wrapper.module is the wrapped model itself. When every use reads the same binding
    # (same function, after the wrap, no rebinding in between) the rewrite is exact;
    # otherwise the name may mean something else there, so it is offered for review only.
    rewrites = tuple(Replace(model.span(u), model.segment(u.value)) for u in uses)
    safe = _same_binding(model, call, names, uses)
    return Finding(
        CODE,
        message,
        model.span(call),
        Severity.WARNING,
        fix=Fix(f"{title} and {shown} → the model", (op, *rewrites), safe=safe),
        manual=None if safe else manual,
    )


def _same_binding(
    model: ScriptModel, call: ast.Call, names: set[str], uses: list[ast.Attribute]
) -> bool:
    scope = model.enclosing_function(call)
    wrap_stmt = model.enclosing_statement(call)
    if scope is None or wrap_stmt is None or len(names) != 1:
        return False
    (name,) = names
    for use in uses:
        if model.enclosing_function(use) is not scope or use.lineno <= call.lineno:
            return False
    rebinds = [
        a
        for a in model.assignments.get(name, [])
        if a is not wrap_stmt and model.enclosing_function(a) is scope and a.lineno > call.lineno
    ]
    return not rebinds


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.calls:
        name = model.call_name(call)
        if name == INIT:
            finding = _init_finding(model, call, ctx)
            if finding is not None:
                yield finding
        elif name in DDP:
            yield _ddp_finding(model, call)


HOVER_BACKEND = """\
**XLA205 · torch.distributed on XLA: the `xla` backend**

NCCL works only on CUDA tensors. Import `torch_xla.distributed.xla_backend` (it registers
the backend) and initialise the group with it.

| target | code |
|---|---|
| modern (torch_xla ≥ 2.5) | `dist.init_process_group("xla", init_method="xla://")` |
| legacy (1.13) | `dist.init_process_group("xla")` |
"""

HOVER_DDP = """\
**XLA205 · DistributedDataParallel → the plain model**

On XLA the gradient all-reduce is done by `xm.optimizer_step(optimizer)` (XLA105) or
`xm.reduce_gradients(optimizer)` (XLA201), the same in legacy and modern torch_xla, so
the model is used unwrapped: `model = DDP(model, device_ids=[rank])` → `model = model`.
Code that reads `ddp_model.module` must use the model itself.
"""

RULE = Rule(
    code=CODE,
    name="ddp-backend",
    category=Category.DISTRIBUTED,
    summary='init_process_group("nccl") → the "xla" backend; DistributedDataParallel → the unwrapped model',
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        INIT: HOVER_BACKEND,
        "torch.nn.parallel.DistributedDataParallel": HOVER_DDP,
        "torch.nn.parallel.distributed.DistributedDataParallel": HOVER_DDP,
    },
)
