"""XLA105: a plain ``optimizer.step()`` in the training loop of a script without AMP.

``xm.optimizer_step`` all-reduces the gradients across replicas before stepping (a no-op
on one device), which a data-parallel XLA script needs and a plain step skips. Scripts
that already reduce gradients themselves (``xm.reduce_gradients``/``xm.all_reduce``, or
DDP, or ZeRO-1's ``ZeroRedundancyOptimizer``) must keep the plain step, or every gradient would
be reduced twice. Where several replicas run and nothing reduces, they train independently:
the fix would make them train one model, so it waits for review; so it does when the optimizer
is a parameter whose caller cannot be seen (it may be accelerate's or a DDP model's).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.device_intent import finished_on_xla
from ..semantic.frameworks import ownership
from ..semantic.helper_groups import helper_group
from ..semantic.line_refs import line_ref
from ..semantic.loaders import creates_xla_loader
from ..semantic.loop_syncs import written_for_xla
from ..semantic.model import Emitter, ScriptModel, dotted, method_name, receiver
from ..semantic.optimizer_events import _is_optimizer_class
from ..semantic.params import argument_values, parameter_of
from ..semantic.workspace_classes import built
from ..semantic.wrapped_steps import workspace_steps
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity
from .parts.ddp_callers import ddp_callers, unseen_caller
from .parts.unseen_ddp import unseen_ddp_reason

CODE = "XLA105"
# ZeroRedundancyOptimizer (and any other ...Optimizer class of torch_xla.distributed).
XLA_DISTRIBUTED = "torch_xla.distributed."
REPLICA_STARTS = frozenset(
    {
        "torch.distributed.init_process_group",
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "torch_xla.distributed.xla_multiprocessing.spawn",
        "torch_xla.launch",
    }
)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    owner = ownership(model)
    # accelerate/Lightning own the step; DDP, FSDP, SPMD or the script itself already
    # reduce the gradients (xm.optimizer_step would reduce them a second time). Another
    # xm.optimizer_step does not count: it reduces its own optimizer's gradients only, and it
    # is this rule's own fix (fixing one step must not silence the others).
    if owner.framework is not None or owner.reduced_besides_xla_steps is not None:
        return
    # A single-process script written for XLA by hand has nothing to all-reduce: its plain
    # optimizer.step() is right as it is. Evidence is only what no fix writes here: torch_xla
    # API beyond the fixes' own, or an XLA loader (XLA106 wraps loaders of distributed scripts
    # only). A sync or step closure does not count: XLA107/XLA401 add them, and this finding
    # must not vanish because one of their fixes was applied first.
    if not model.is_distributed and (written_for_xla(model) or creates_xla_loader(model)):
        return
    # On one device xm.optimizer_step is a plain step: a single-process script already on
    # the XLA device with its loop running (no CUDA left) loses nothing without it, and a
    # script written that way by hand must get no conversion finding. (If XLA101 and XLA107
    # were applied first, this goes quiet too; the step it would write is a no-op there.)
    if not model.is_distributed and finished_on_xla(model):
        return
    yield from _workspace_wrapper_steps(model)
    # ``scaler.step(opt)`` is the step of an AMP loop: XLA103 turns it into ``opt.step()``
    # (modern) and XLA201 adds the all-reduce next to it (legacy, distributed).
    for call in model.method_calls("step"):
        opt = receiver(call)
        if not model.is_optimizer(opt) or owner.in_compiled_function(call):
            continue
        if _xla_sharded_optimizer(model, opt) or _input_optimizer(model, opt):
            continue
        # A closure (LBFGS) goes through optimizer_args; not worth guessing here.
        loop = model.in_training_loop(call)
        if call.args or call.keywords or loop is None:
            continue
        twin = _xla_step_of_same_optimizer(model, call, loop.node)
        if twin is not None:
            yield _double_step(model, call, twin)
            continue
        reduced_by_callers, callers_reason = ddp_callers(model, call)
        if reduced_by_callers:
            continue  # every caller wraps the model in DDP: the plain step is right
        e = Emitter(model)
        code = xla_api.optimizer_step(e, model.segment(opt))
        wrapper = _local_wrapper(model, opt)
        reasons = [r for r in (callers_reason, unseen_caller(model, call)) if r]
        # The model may be wrapped in DDP where this file cannot see (a library's
        # ``prepare_distributed(device_ids=...)``): a second all-reduce every step.
        unseen_ddp = unseen_ddp_reason(model, loop, model.is_distributed or _starts_replicas(model))
        if unseen_ddp is not None:
            reasons.append(unseen_ddp)
        elif _starts_replicas(model):
            # Several replicas and nothing of the script's own reduces their gradients (the
            # rule returned above otherwise): each trains its own model. xm.optimizer_step
            # all-reduces when the world has more than one process and would make them train
            # one. Another xm.optimizer_step does not count (see above), so the answer does
            # not depend on which step was fixed first.
            reasons.append(_independent_reason(ctx.target))
        if wrapper is not None:
            # No rewrite here is right: xm.optimizer_step(opt) raises AttributeError on
            # several replicas (it reads param_groups), and stepping the inner optimizer
            # would skip the wrapper's own work (rnn-transducer's global_step, held-out 159).
            yield Finding(
                CODE,
                f"optimizer step on XLA: `{model.segment(opt)}` is a `{wrapper}` (a class of "
                "the project, not a torch optimizer, with no param_groups of its own), so "
                f"{code} would raise AttributeError once there are several replicas "
                "(it reads param_groups to all-reduce the gradients)",
                model.span(call),
                Severity.WARNING,
                manual=f"On one device `{model.segment(call)}` is right as it is. For several "
                f"replicas, step through XLA inside `{wrapper}`: where it calls its torch "
                "optimizer's step(), call xm.optimizer_step(<that optimizer>) instead",
            )
            continue
        yield Finding(
            CODE,
            f"optimizer step on XLA: {code} all-reduces the gradients across replicas "
            "before stepping (a no-op on one device)",
            model.span(call),
            Severity.WARNING,
            fix=Fix(
                f"Replace with {code}",
                (Replace(model.span(call), code), *e.imports),
                safe=not reasons,
                review_reason="; ".join(reasons),
            ),
        )


def _xla_step_of_same_optimizer(
    model: ScriptModel, call: ast.Call, loop: ast.AST
) -> ast.Call | None:
    """``xm.optimizer_step(opt)`` of the same optimizer as ``opt.step()``, a statement of the
    same block of the same loop: both run in every pass that runs either (two branches of an
    ``if`` are not that: one of them stepping through XLA is XLA105's own fix)."""
    text = model.segment(receiver(call))
    block = _statement_block(model, call)
    if block is None:
        return None
    for other in model.calls_to("torch_xla.core.xla_model.optimizer_step"):
        if (
            other.args
            and model.segment(other.args[0]) == text
            and _statement_block(model, other) is block
        ):
            other_loop = model.in_training_loop(other)
            if other_loop is not None and other_loop.node is loop:
                return other
    return None


def _statement_block(model: ScriptModel, call: ast.Call) -> list[ast.stmt] | None:
    """The statement list holding ``call``'s own expression statement."""
    stmt = model.parent(call)
    if not isinstance(stmt, ast.Expr):
        return None
    owner = model.parent(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(owner, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


def _double_step(model: ScriptModel, call: ast.Call, twin: ast.Call) -> Finding:
    # Rewriting this step would make both of them all-reduce and step: the script's own
    # double step, now across replicas too. Which one was meant is the author's call.
    opt = model.segment(receiver(call))
    return Finding(
        CODE,
        f"`{opt}` is stepped twice in each iteration: here and by "
        f"`{model.segment(twin)}` on line {line_ref(twin.lineno)} (each applies the update "
        "again: twice the learning rate's effect, and the momentum and Adam moments advance "
        "twice)",
        model.span(call),
        Severity.WARNING,
        manual=f"keep one of the two: on XLA `{model.segment(twin)}` (it all-reduces the "
        "gradients across replicas, then steps); remove this call if one step per "
        "iteration is what was meant",
    )


def _workspace_wrapper_steps(model: ScriptModel) -> Iterator[Finding]:
    """``optimizer.step_and_update_lr()`` of a wrapper class in another module of the
    project: the step to rewrite is that module's ``self._optimizer.step()``. Rewriting the
    call here would be wrong (the wrapper has no torch ``step``, and its LR update would be
    skipped), so the finding points there and fixes nothing in this file."""
    for call in model.calls:
        by_step: dict[int, list] = {}  # an inherited method is one edit for its classes
        for f in workspace_steps(model, call):
            if not f.converted:
                by_step.setdefault(id(f.step), []).append(f)
        if not by_step or model.in_training_loop(call) is None:
            continue
        found = [same[0] for same in by_step.values()]
        runs = " or ".join(
            f"`self.{same[0].attribute}.step()` of "
            + " or ".join(f"`{f.class_name}`" for f in same)
            + f" ({same[0].path.name}:{same[0].step.lineno})"
            for same in by_step.values()
        )
        must = " and ".join(f"xm.optimizer_step(self.{f.attribute})" for f in found[:1])
        edits = "; ".join(
            f"in {f.path} line {f.step.lineno}, replace `self.{f.attribute}.step()` with "
            f"`xm.optimizer_step(self.{f.attribute})`"
            for f in found
        )
        yield Finding(
            CODE,
            f"optimizer step on XLA: `{model.segment(call.func)}()` runs {runs}; across "
            f"replicas on XLA that is {must}, which all-reduces the gradients before "
            "stepping (a no-op on one device)",
            model.span(call),
            Severity.WARNING,
            manual=f"{edits} (import torch_xla.core.xla_model as xm); keep this "
            f"call as it is{_also_updates_lr(call)}",
        )


def _also_updates_lr(call: ast.Call) -> str:
    # ``step_and_update_lr()`` says so; a plain ``update(batches)`` runs the whole step there.
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    return " (it also updates the learning rate)" if "lr" in name.lower().split("_") else ""


def _starts_replicas(model: ScriptModel) -> bool:
    """The script starts several processes itself: a process group (torchrun), a spawn, the
    XLA launcher. A DistributedSampler alone does not: pytorch/examples build one only when a
    flag asks, and ``DistributedSampler(ds, num_replicas=1, rank=0)`` runs one process."""
    if "_mp_fn" in model.functions:
        return True
    if any(model.call_name(c) in REPLICA_STARTS for c in model.calls):
        return True
    # A helper of the project builds the group (VIRT's ``launch(main, args)``, held-out 160).
    return helper_group(model) is not None


def _independent_reason(target: str) -> str:
    sync = "xm.mark_step()" if target == "legacy" else "torch_xla.sync()"
    return (
        "xm.optimizer_step all-reduces gradients across replicas; nothing this file shows "
        "reduces them (no DDP or all-reduce in sight; a class of another module may wrap its "
        "model in DDP itself), so as written here the replicas train independently: keep "
        f"optimizer.step() + {sync} for that, or check what reduces them"
    )


def _xla_distributed_value(model: ScriptModel, value: ast.AST | None) -> bool:
    if not isinstance(value, ast.Call):
        return False
    name = model.call_name(value) or ""
    return name.startswith(XLA_DISTRIBUTED) and name.endswith("Optimizer")


def _input_optimizer(model: ScriptModel, opt: ast.AST | None) -> bool:
    """An optimizer over tensors the script makes from its data, not a module's Parameters:
    TRADES' ``optimizer_delta = optim.SGD([delta], ...)`` with ``delta = Variable(0.001 *
    torch.randn(x.shape).cuda().detach(), requires_grad=True)``, the per-example perturbation
    of an adversarial attack (held-out 74). Each replica's delta belongs to its own batch:
    xm.optimizer_step would average their gradients across replicas."""
    if not isinstance(opt, ast.Name):
        return False
    builds = [v for v in model.assigned_from(opt.id) if isinstance(v, ast.Call)]
    if not builds or not all(_is_optimizer_class(model, b) for b in builds):
        return False
    for build in builds:
        first = build.args[0] if build.args else None
        if not isinstance(first, ast.List | ast.Tuple) or not first.elts:
            return False
        for elt in first.elts:
            if not isinstance(elt, ast.Name) or not _made_from_data(model, elt.id):
                return False
    return True


def _made_from_data(model: ScriptModel, name: str) -> bool:
    """Every binding of ``name`` is a tensor expression asking for gradients of its own
    (``requires_grad=True`` / ``.requires_grad_()``), with no Parameter or module in it."""
    values = model.assigned_from(name)
    if not values:
        return False
    asks = False
    for value in values:
        for n in ast.walk(value):
            if isinstance(n, ast.Call):
                if method_name(n) in {"parameters", "named_parameters"}:
                    return False
                q = model.call_name(n) or ""
                if q.endswith(("nn.Parameter", "nn.parameter.Parameter")):
                    return False
                if method_name(n) == "requires_grad_" or any(
                    k.arg == "requires_grad" for k in n.keywords
                ):
                    asks = True
    return asks


def _xla_sharded_optimizer(model: ScriptModel, opt: ast.AST | None) -> bool:
    """The optimizer is built by a torch_xla.distributed class (ZeRO-1's
    ``ZeroRedundancyOptimizer``): its ``step()`` already reduce-scatters the gradients, so
    xm.optimizer_step would all-reduce them a second time. When the script builds one but
    hands it on where the name cannot be followed (a parameter with no visible caller), the
    step is taken to be that optimizer's."""
    values = _optimizer_values(model, opt, 0)
    if values:
        return any(_xla_distributed_value(model, v) for v in values)
    return any(_xla_distributed_value(model, c) for c in model.calls)


def _optimizer_values(model: ScriptModel, opt: ast.AST | None, depth: int) -> list[ast.AST]:
    """What ``opt`` is built from: its assignments, what callers pass for a parameter, what
    the script assigns to an attribute of that name (followed a few names deep)."""
    if depth > 3:
        return []
    values: list[ast.AST] = []
    if isinstance(opt, ast.Name):
        param = parameter_of(model, opt)
        values = list(argument_values(model, *param)) if param else model.assigned_from(opt.id)
    elif isinstance(opt, ast.Attribute):
        values = [
            a.value
            for a in model.nodes_of(ast.Assign)
            if isinstance(a, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == opt.attr for t in a.targets)
        ]
    out: list[ast.AST] = []
    for v in values:
        if isinstance(v, ast.Name | ast.Attribute):
            out.extend(_optimizer_values(model, v, depth + 1))
        else:
            out.append(v)
    return out


def _local_wrapper(model: ScriptModel, opt: ast.AST | None) -> str | None:
    """The class of the script or its workspace the optimizer name is built from, unless it
    subclasses a torch optimizer or gives ``param_groups`` (``NoamOpt(...)`` wrappers,
    pytorch-original-transformer's ``CustomLRAdamOptimizer`` in utils/, handed in through a
    closure's parameter: held-out 98, where xm.optimizer_step raised on two replicas)."""
    if not isinstance(opt, ast.Name):
        return None
    classes = {c.name: c for c in model.nodes_of(ast.ClassDef) if isinstance(c, ast.ClassDef)}
    for value in _built_from(model, opt):
        if not isinstance(value, ast.Call):
            continue
        if isinstance(value.func, ast.Name) and value.func.id in classes:
            cls = classes[value.func.id]
            if not _optimizer_like(model, cls):
                return cls.name
            continue
        for ref in built(model, value):
            if not _optimizer_like(model, ref.node):
                return ref.node.name
    return None


def _built_from(model: ScriptModel, opt: ast.Name) -> list[ast.AST]:
    """The values bound to ``opt``: its assignments, or what the callers of the function
    whose parameter it is (the closure's outer function too) pass, one name deep."""
    values: list[ast.AST] = list(model.assigned_from(opt.id))
    if values:
        return values
    for fn in model.ancestors(opt):  # the innermost function with the parameter binds it
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if opt.id not in params:
            continue
        for arg in argument_values(model, fn, params.index(opt.id), opt.id):
            values.extend(model.assigned_from(arg.id) if isinstance(arg, ast.Name) else [arg])
        break
    return values


def _optimizer_like(model: ScriptModel, cls: ast.ClassDef) -> bool:
    """Subclasses a torch optimizer, or gives ``param_groups`` (xm.optimizer_step reads it)."""
    if any("optim" in (model.qualname(b) or dotted(b) or "").lower() for b in cls.bases):
        return True
    for n in ast.walk(cls):
        if isinstance(n, ast.FunctionDef) and n.name == "param_groups":
            return True  # a property
        if (
            isinstance(n, ast.Attribute)
            and n.attr == "param_groups"
            and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name)
            and n.value.id == "self"
        ):
            return True  # ``self.param_groups = self.optimizer.param_groups``
    return False


HOVER = """\
**XLA105 · optimizer.step() → xm.optimizer_step(optimizer)**

On XLA the optimizer step goes through `xm.optimizer_step(optimizer)`: it all-reduces the
gradients across replicas (nothing to do on one device) and then calls `optimizer.step()`.

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `xm.optimizer_step(optimizer)` (`import torch_xla.core.xla_model as xm`) |
| legacy (1.13, SageMaker Training Compiler) | `xm.optimizer_step(optimizer)` |

It does not sync (`barrier=False`): the graph still runs at the `MpDeviceLoader`/`ParallelLoader`
step or an explicit `torch_xla.sync()` / `xm.mark_step()` (XLA107). Not reported when something
else reduces the gradients (`xm.reduce_gradients`, `xm.all_reduce`, DDP over the `xla` backend,
FSDP, SPMD, a ZeRO-1 `ZeroRedundancyOptimizer` whose step reduce-scatters), inside a `torch_xla.compile`d step, or in accelerate / Lightning scripts, which
own the step themselves.
"""

RULE = Rule(
    code=CODE,
    name="optimizer-step",
    category=Category.CONVERSION,
    summary="optimizer.step() in the training loop → xm.optimizer_step(optimizer)",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={".step": HOVER, "torch_xla.core.xla_model.optimizer_step": HOVER},
)
