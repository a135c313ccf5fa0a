"""XLA205: the NCCL process group, and DDP arguments that name CUDA devices.

NCCL exists only for CUDA tensors; torch.distributed on XLA devices goes through the
``xla`` backend (registered by importing ``torch_xla.distributed.xla_backend``).
DistributedDataParallel itself is a supported PyTorch/XLA mode: over the ``xla`` backend it
all-reduces the gradients exactly as on CUDA, so the meaning-preserving conversion keeps
it. Only ``device_ids``/``output_device`` go: they name CUDA indices, and each XLA process
owns one device (``device_ids=[rank]`` would point rank 1 at a device it cannot see).
Removing DDP would make the replicas train independently unless every optimizer step
all-reduces (the step may be ``scaler.step``, or in another module), so it is never offered.
The DDP findings are ``parts/ddp_device_ids.py``; this module is the process group's backend.

The backend is often not a literal at the call: ``backend=args.dist_backend`` with an
argparse default, ``cfg["backend"]`` with a dict literal. The fix goes where the literal
lives, or the finding says where to change it when that is out of reach.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from ..semantic.arguments import argparse_options, attribute_reads, literal_sources
from ..semantic.device_intent import hand_written_xla, runs_on_cuda
from ..semantic.line_refs import line_ref, line_refs
from ..semantic.model import ScriptModel, arg_or_keyword, const_str, keyword
from .base import (
    AddImport,
    Category,
    EditOp,
    Finding,
    Fix,
    RemoveKeyword,
    Replace,
    Rule,
    RuleContext,
    SetKeyword,
    Severity,
)
from .parts.accelerate_dist_guards import accelerate_dist_guard_findings
from .parts.backend_attribute import assigned_before, other_stores, stores_any_other_way
from .parts.current_device import cuda_placements_kept
from .parts.ddp_device_ids import ddp_findings
from .parts.ddp_helpers import helper_device_ids_findings
from .parts.foreign_launcher import group_launcher_reason, review_under_launcher
from .parts.fsdp_idioms import fsdp_findings
from .parts.horovod import horovod_findings
from .parts.library_dist_init import library_init_findings

CODE = "XLA205"
INIT = "torch.distributed.init_process_group"
DDP = {
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
}
XLA_BACKEND_IMPORT = "import torch_xla.distributed.xla_backend"
BACKEND_MESSAGE = 'NCCL is CUDA-only: on XLA devices torch.distributed uses the "xla" backend'


class _CudaBackends:
    """``text in CUDA_BACKENDS``: "nccl", or a per-device-type list with an NCCL part
    (``"cuda:nccl,cpu:gloo"``)."""

    def __contains__(self, text: object) -> bool:
        if not isinstance(text, str):
            return False
        parts = [p.strip() for p in text.split(",")]
        return any(p == "nccl" or p.endswith(":nccl") for p in parts)


CUDA_BACKENDS = _CudaBackends()


def _quoted(model: ScriptModel, node: ast.AST, text: str) -> str:
    seg = model.segment(node)
    quote = seg[0] if seg[:1] in {"'", '"'} else '"'
    return f"{quote}{text}{quote}"


def _backend_ops(
    model: ScriptModel, call: ast.Call, ctx: RuleContext, quote_from: ast.AST
) -> tuple[list[EditOp], str]:
    """The ops every backend fix adds (the backend import, the ``xla://`` rendezvous) and why
    they need review ("" when they do not). The "xla" backend is right only in processes
    torch_xla's launcher starts, which set none of torchrun's variables: the env:// rendezvous
    (the default) fails there ("MASTER_ADDR expected"), so the rendezvous becomes xla://."""
    ops: list[EditOp] = []
    reason = ""
    # With a store of its own the group needs no rendezvous: torch.distributed refuses
    # init_method beside store= ("Cannot specify both init_method and store", verified).
    if ctx.target == "modern" and keyword(call, "store") is None:
        method = arg_or_keyword(call, 1, "init_method")
        xla = _quoted(model, quote_from if method is None else method, "xla://")
        if method is None:
            ops.append(SetKeyword(model.span(call), "init_method", xla))
        else:
            ops.append(Replace(model.span(method), xla))
            reason = _rendezvous_reason(model, method)
    ops.append(AddImport(XLA_BACKEND_IMPORT))
    return ops, reason


def _rendezvous_reason(model: ScriptModel, method: ast.expr) -> str:
    """Why replacing ``init_method`` by ``"xla://"`` needs review ("" for a literal env://,
    which names nothing the XLA launcher could provide)."""
    value = const_str(method)
    if value == "env://":
        return ""
    if value is not None:
        return (
            f"the rendezvous {value!r} is replaced by xla:// (torch_xla's launcher sets no "
            "address or rank for it): the address it names is no longer used"
        )
    option = argparse_options(model).get(method.attr) if isinstance(method, ast.Attribute) else None
    given = (
        f"a --{method.attr} given on the command line is no longer used"  # type: ignore[union-attr]
        if option is not None
        else f"whatever `{model.segment(method)}` holds is no longer used"
    )
    return (
        f"init_method `{model.segment(method)}` becomes xla:// (under torch_xla's launcher an "
        f"env:// or tcp:// rendezvous cannot start: no MASTER_ADDR/RANK): {given}"
    )


def _fix(title: str, ops: list[EditOp], extra: tuple[list[EditOp], str]) -> Fix:
    more, reason = extra
    return Fix(title, (*ops, *more), safe=not reason, review_reason=reason)


def _already_xla(model: ScriptModel, call: ast.Call) -> bool:
    method = const_str(arg_or_keyword(call, 1, "init_method"))
    return method is not None and method.startswith("xla://")


def _init_finding(model: ScriptModel, call: ast.Call, ctx: RuleContext) -> Finding | None:
    backend = arg_or_keyword(call, 0, "backend")
    # ``**kwargs`` may hold an ``init_method="xla://..."`` (or, with no backend given here,
    # the backend itself): only a backend passed here is judged then.
    if _already_xla(model, call) or (
        backend is None and any(kw.arg is None for kw in call.keywords)
    ):
        return None
    if backend is None:
        return _no_backend(model, call, ctx)
    value = const_str(backend)
    if value is not None:
        if value == "gloo":
            return _gloo_finding(model, call, ctx, backend)
        if value not in CUDA_BACKENDS:
            return None
        ops: list[EditOp] = [Replace(model.span(backend), _quoted(model, backend, "xla"))]
        if keyword(call, "device_id") is not None:
            # Measured (torch 2.9, PJRT CPU): device_id=<the XLA device> raises ValueError
            # ("does not match the current compilation's accelerator support: cuda").
            ops.append(RemoveKeyword(model.span(call), "device_id"))
        return _finding(
            model,
            backend,
            _fix('Use the "xla" backend', ops, _backend_ops(model, call, ctx, backend)),
        )
    store, sources = _followed(model, backend)
    if sources is None:
        helper = _default_backend_call(model, backend)
        if helper is not None:
            return Finding(
                CODE,
                f"`{model.segment(helper.func)}` does not know the XLA device (ValueError: "
                '"Default backend not registered for device: xla:0"): the backend on XLA is "xla"',
                model.span(backend),
                Severity.WARNING,
                manual=f'make `{model.segment(backend)}` "xla" (and import '
                "torch_xla.distributed.xla_backend)",
            )
        if _computes_own_backend(model):
            return None
        return Finding(
            CODE,
            f"{BACKEND_MESSAGE}; this backend comes from `{model.segment(backend)}`, "
            "which xla-lens cannot follow",
            model.span(backend),
            Severity.WARNING,
            manual=f'make `{model.segment(backend)}` "xla" when running on XLA (and import '
            "torch_xla.distributed.xla_backend)",
        )
    cuda = [s for s in sources if const_str(s) in CUDA_BACKENDS]
    if not cuda:
        return None
    if isinstance(backend, ast.IfExp | ast.Name) or store is not None:
        # ``"nccl" if cuda else "gloo"`` / a local bound a few lines up / ``args.backend =
        # "nccl"`` just above: the converted script always runs on XLA; only this call's
        # value changes (whatever else reads the name or attribute still sees "nccl").
        ops = [Replace(model.span(backend), _quoted(model, cuda[0], "xla"))]
        fix = _fix('Use the "xla" backend', ops, _backend_ops(model, call, ctx, cuda[0]))
        return _finding(model, backend, fix)
    fix = _fix_at_source(model, call, ctx, backend, cuda)
    return _finding(model, backend, fix)


GLOO_MESSAGE = (
    'the "gloo" backend reduces CPU tensors, not XLA tensors: DistributedDataParallel over XLA '
    'devices needs the "xla" backend (over gloo it raises at construction: "ProcessGroupGloo::'
    'allgather: invalid tensor type", measured on torch_xla 2.9)'
)
GLOO_REVIEW = (
    "collectives this group also runs on CPU tensors or Python objects then need a gloo group of "
    'their own (dist.new_group(backend="gloo"))'
)


def _gloo_finding(
    model: ScriptModel, call: ast.Call, ctx: RuleContext, backend: ast.expr
) -> Finding | None:
    """``init_process_group("gloo")`` in a CUDA script whose DDP the conversion puts on XLA
    tensors (pi-GAN, held-out 35). A script without DDP, or not on CUDA (a CPU script, or one
    written for XLA), keeps its gloo group."""
    ddps = list(model.calls_to(*DDP))
    on_cuda = runs_on_cuda(model) or any(keyword(c, "device_ids") is not None for c in ddps)
    reducer = None if ddps else _reducing_optimizer(model)
    if not (ddps or reducer) or not on_cuda or hand_written_xla(model):
        return None
    ops: list[EditOp] = [Replace(model.span(backend), _quoted(model, backend, "xla"))]
    more, reason = _backend_ops(model, call, ctx, backend)
    reason = f"{reason}; {GLOO_REVIEW}" if reason else GLOO_REVIEW
    fix = Fix('Use the "xla" backend', (*ops, *more), safe=False, review_reason=reason)
    message = GLOO_MESSAGE
    if reducer is not None:
        message = GLOO_REDUCER_MESSAGE.format(
            name=model.segment(reducer.func), line=line_ref(reducer.lineno)
        )
    return Finding(
        CODE,
        message,
        model.span(backend),
        Severity.WARNING,
        fix=fix,
        manual=f"review: {reason}",
    )


# Optimizer wrappers that all-reduce the gradients over the default process group themselves.
REDUCING_OPTIMIZERS = frozenset({"cherry.optim.Distributed", "horovod.torch.DistributedOptimizer"})
GLOO_REDUCER_MESSAGE = (
    'the "gloo" backend reduces CPU tensors, not XLA tensors: once the model is on the XLA '
    "device, `{name}` (line {line}) all-reduces XLA gradients over gloo, which returns without "
    "reducing them (measured on torch_xla 2.9: each of two processes kept its own values), so "
    'the replicas train apart with no error; use the "xla" backend'
)


def _reducing_optimizer(model: ScriptModel) -> ast.Call | None:
    """``cherry.optim.Distributed(params, opt=opt)`` (learn2learn's distributed MAML)."""
    return next((c for c in model.calls if model.call_name(c) in REDUCING_OPTIMIZERS), None)


def _computes_own_backend(model: ScriptModel) -> bool:
    """An XLA script computing its backend: its own business. Not a script another fix just
    gave ``import torch_xla`` while it still runs on CUDA (fix re-checks its output). Once
    converted, a backend out of reach looks the same as a hand-written XLA script's; a value
    the script sets itself (``args.dist_backend = "nccl"``) is followed and stays reported."""
    return model.uses_torch_xla and not runs_on_cuda(model)


def _followed(
    model: ScriptModel, backend: ast.expr
) -> tuple[ast.Assign | None, list[ast.expr] | None]:
    """The ``holder.attr = ...`` statement the call surely reads (if any) and the literals the
    backend can be."""
    store = assigned_before(model, backend) if isinstance(backend, ast.Attribute) else None
    if store is not None:
        return store, literal_sources(model, store.value)
    return None, _sources(model, backend)


def _sources(model: ScriptModel, backend: ast.expr) -> list[ast.expr] | None:
    """``literal_sources``, plus the values ``<x>.attr = ...`` writes elsewhere in the file
    for an attribute (a helper sets it before the call)."""
    sources = literal_sources(model, backend)
    if not isinstance(backend, ast.Attribute) or stores_any_other_way(model, backend.attr):
        return sources
    extra: list[ast.expr] = []
    for store in other_stores(model, backend.attr):
        got = literal_sources(model, store.value)
        if got is None:
            return sources
        extra.extend(got)
    if sources is None and not any(const_str(s) in CUDA_BACKENDS for s in extra):
        return None  # the origin is out of reach and the stores seen prove nothing
    return [*(sources or []), *extra]


def _source_findings(model: ScriptModel, call: ast.Call) -> Iterator[Finding]:
    """A note where the "nccl" literal of ``backend=args.x`` / ``cfg["k"]`` is written, so
    the editor shows it there too (the fix is offered on the init_process_group finding)."""
    backend = arg_or_keyword(call, 0, "backend")
    if backend is None or isinstance(backend, ast.Constant | ast.IfExp | ast.Name):
        return
    if _already_xla(model, call):
        return
    for literal in _followed(model, backend)[1] or []:
        if const_str(literal) in CUDA_BACKENDS:
            yield Finding(
                CODE,
                f'"nccl" here becomes the process-group backend at line {line_ref(call.lineno)} '
                f'(`{model.segment(backend)}`): on XLA devices it must be "xla"',
                model.span(literal),
                Severity.WARNING,
                manual=f"see the finding at line {line_ref(call.lineno)}",
            )


def _fix_at_source(
    model: ScriptModel, call: ast.Call, ctx: RuleContext, backend: ast.expr, cuda: list[ast.expr]
) -> Fix | None:
    """``args.dist_backend`` / ``cfg["backend"]``: change the literal where it is written."""
    if len(cuda) != 1:
        return None
    literal = cuda[0]
    # ``default="nccl" if torch.cuda.is_available() else "gloo"``: the whole choice goes
    # (the converted script runs on XLA whether or not CUDA is there).
    written: ast.expr = literal
    while isinstance(model.parent(written), ast.IfExp):
        written = model.parent(written)  # type: ignore[assignment]
    ops: list[EditOp] = [Replace(model.span(written), _quoted(model, literal, "xla"))]
    reasons: list[str] = []
    if isinstance(backend, ast.Attribute):
        option = argparse_options(model).get(backend.attr)
        if option is not None and option.default is written:
            if option.choices is not None:
                return None  # "xla" is probably not among the choices: a hand edit
            others = [r for r in attribute_reads(model, backend.attr) if r is not backend]
            if others:
                lines = line_refs(r.lineno for r in others)
                reasons.append(
                    f"`{backend.attr}` is also read on line {lines}: a new default changes "
                    "what those lines see"
                )
            stores = other_stores(model, backend.attr)
            if stores:
                lines = line_refs(a.lineno for a in stores)
                reasons.append(
                    f"`{backend.attr}` is also set on line {lines}: the call may not read the "
                    "default"
                )
            where = f"the --{backend.attr} default (line {line_ref(literal.lineno)})"
        else:
            reasons.append("the value also configures anything else that reads it")
            where = f"line {line_ref(literal.lineno)}"
    else:
        reasons.append("the config value may be read elsewhere too")
        where = f"line {line_ref(literal.lineno)}"
    more, method_reason = _backend_ops(model, call, ctx, literal)
    ops.extend(more)
    if method_reason:
        reasons.append(method_reason)
    return Fix(
        f'Use the "xla" backend: change "nccl" at {where}',
        tuple(ops),
        safe=not reasons,
        review_reason="; ".join(reasons),
    )


DEFAULT_BACKEND = "torch.distributed.get_default_backend_for_device"


def _default_backend_call(model: ScriptModel, backend: ast.expr) -> ast.Call | None:
    """``backend=dist.get_default_backend_for_device(acc)``, directly or through the one
    binding of a local name: torch's device→backend map has no entry for XLA."""
    if isinstance(backend, ast.Name):
        scope = model.enclosing_function(backend) or model.tree
        stores = [
            n
            for n in model.name_nodes(backend.id)
            if not isinstance(n.ctx, ast.Load)
            and (model.enclosing_function(n) or model.tree) is scope
        ]
        parent = model.parent(stores[0]) if len(stores) == 1 else None
        if not isinstance(parent, ast.Assign) or parent.targets != [stores[0]]:
            return None
        backend = parent.value
    if isinstance(backend, ast.Call) and model.call_name(backend) == DEFAULT_BACKEND:
        return backend
    return None


def _one_process_group(call: ast.Call) -> bool:
    """``init_process_group(world_size=1, rank=0, store=dist.HashStore())``: a group of this
    process alone (k-diffusion sets one up so that code asking for a rank works without a
    launcher, held-out 45): no collective crosses processes, and NCCL is never asked for."""
    size = keyword(call, "world_size")
    return (
        keyword(call, "store") is not None
        and size is not None
        and isinstance(size.value, ast.Constant)
        and size.value.value == 1
    )


def _no_backend(model: ScriptModel, call: ast.Call, ctx: RuleContext) -> Finding | None:
    if model.uses_torch_xla or call.args or _one_process_group(call):
        return None
    more, method_reason = _backend_ops(model, call, ctx, call)
    ops = [SetKeyword(model.span(call), "backend", '"xla"'), *more]
    reason = "collectives on CPU tensors (gloo) in this script would stop working"
    return Finding(
        CODE,
        "init_process_group() without a backend picks NCCL for CUDA tensors; on XLA devices "
        'torch.distributed uses the "xla" backend',
        model.span(call),
        Severity.WARNING,
        fix=Fix(
            'Use the "xla" backend',
            tuple(ops),
            safe=False,
            review_reason="; ".join(r for r in (reason, method_reason) if r),
        ),
    )


def _finding(model: ScriptModel, backend: ast.expr, fix: Fix | None) -> Finding:
    manual = None
    if fix is None:
        manual = f'make `{model.segment(backend)}` "xla" (its value is set in more than one place)'
    elif not fix.safe:
        manual = f"review: {fix.review_reason}"
    return Finding(
        CODE, BACKEND_MESSAGE, model.span(backend), Severity.WARNING, fix=fix, manual=manual
    )


FORWARDED = (
    "the call forwards **{name}, which may hold an init_method too (the call would then get "
    "two: TypeError); check what its callers pass"
)


def _forwarding_review(call: ast.Call, finding: Finding) -> Finding:
    """A fix that adds ``init_method=`` to a call forwarding ``**kwargs`` (KAIR's
    ``init_process_group(backend=backend, **kwargs)``) waits for review."""
    fix = finding.fix
    forwarded = next((k.value for k in call.keywords if k.arg is None), None)
    adds_method = fix is not None and any(
        isinstance(op, SetKeyword) and op.name == "init_method" for op in fix.ops
    )
    if fix is None or not fix.safe or forwarded is None or not adds_method:
        return finding
    name = forwarded.id if isinstance(forwarded, ast.Name) else "..."
    reason = FORWARDED.format(name=name)
    return replace(finding, fix=replace(fix, safe=False, review_reason=reason))


def _with_devices(model: ScriptModel, ctx: RuleContext, finding: Finding) -> Finding:
    """The backend change waits while the script's device change does (Sophia, held-out 88:
    `init_process_group(backend="xla")` applied, `device = f"cuda:{local_rank}"` left for
    review; DDP then raised "Expected XLA tensor" at construction where the original ran)."""
    fix = finding.fix
    if fix is None or not fix.safe:
        return finding
    kept = cuda_placements_kept(model, ctx.target)
    if not kept:
        return finding
    reason = (
        f"the device change on line {line_ref(kept[0])} (XLA101) waits for review: with an "
        '"xla" process group and the model still on CUDA, DDP raises at construction '
        '("Expected XLA tensor"); apply them together'
    )
    return replace(
        finding,
        message=f"{finding.message} (fix needs review: {reason})",
        fix=replace(fix, safe=False, review_reason=reason),
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.calls:
        name = model.call_name(call)
        if name == INIT:
            finding = _init_finding(model, call, ctx)
            if finding is not None:
                finding = _forwarding_review(call, finding)
                yield from _source_findings(model, call)
                # The "xla" backend reduces only across processes torch_xla's launcher starts.
                reason = group_launcher_reason(model, ctx.target, call)
                finding = review_under_launcher(model, finding, call, ctx.target, reason)
                yield _with_devices(model, ctx, finding)
        elif name in DDP:
            yield from ddp_findings(model, call, CODE)
    yield from fsdp_findings(model, CODE)
    yield from helper_device_ids_findings(model, CODE)
    yield from library_init_findings(model, CODE)
    yield from horovod_findings(model, CODE)
    yield from accelerate_dist_guard_findings(model, CODE)


HOVER_BACKEND = """\
**XLA205 · torch.distributed on XLA: the `xla` backend**

NCCL works only on CUDA tensors. Import `torch_xla.distributed.xla_backend` (it registers
the backend) and initialise the group with it.

| target | code |
|---|---|
| modern (torch_xla ≥ 2.5) | `dist.init_process_group("xla", init_method="xla://")` |
| legacy (1.13) | `dist.init_process_group("xla")` |

When the backend comes from `args.dist_backend` or a config dict, the fix changes the
`"nccl"` literal where it is written (argparse default, dict literal); it is marked for
review when other code reads the same option.
"""

HOVER_DDP = """\
**XLA205 · DistributedDataParallel on XLA**

DDP is a supported PyTorch/XLA mode: over the `xla` backend its gradient all-reduce works
as on CUDA, so it stays. Leave out `device_ids` / `output_device` (CUDA indices; each XLA
process owns one device) and consider `gradient_as_bucket_view=True`:
`DDP(model, gradient_as_bucket_view=True)`. With DDP the optimizer step stays
`optimizer.step()` (`xm.optimizer_step` would all-reduce a second time).
"""

RULE = Rule(
    code=CODE,
    name="ddp-backend",
    category=Category.DISTRIBUTED,
    summary='init_process_group("nccl") → the "xla" backend; DDP kept, without CUDA device_ids',
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        INIT: HOVER_BACKEND,
        "torch.nn.parallel.DistributedDataParallel": HOVER_DDP,
        "torch.nn.parallel.distributed.DistributedDataParallel": HOVER_DDP,
    },
)
