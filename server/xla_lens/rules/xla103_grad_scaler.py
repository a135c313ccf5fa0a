"""XLA103: a CUDA GradScaler.

Legacy target: the guide's ``torch_xla.amp.GradScaler``. Modern target: with bf16 autocast
no loss scaling is needed (GUIDE G), so the scaler goes away and its calls become the
plain backward/step they wrap; that is only done when every use of the scaler is one
of those calls.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from ..semantic.line_refs import line_ref
from ..semantic.model import Emitter, ScriptModel, arg_or_keyword, is_cuda_string, keyword
from ..semantic.precision import float16_uses
from .base import (
    Category,
    EditOp,
    Finding,
    Fix,
    RemoveKeyword,
    RemoveStatement,
    Replace,
    Rule,
    RuleContext,
    SetArgs,
    Severity,
)
from .parts.apex_fp16_utils import apex_fp16_utils_findings
from .parts.device_from_caller import device_from_caller
from .parts.final_fixes import final_findings
from .parts.manual_loss_scaling import manual_loss_scaling
from .parts.timm_scalers import timm_scaler_findings
from .xla102_cuda_autocast import CODE as AUTOCAST_RULE
from .xla102_cuda_autocast import MESSAGE as AUTOCAST_MESSAGE
from .xla102_cuda_autocast import check as autocast_check

CODE = "XLA103"
AUTOCAST_MESSAGE_START = AUTOCAST_MESSAGE.split("{", 1)[0]

CUDA_SCALERS = {"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"}
# torch.amp.GradScaler(device="cuda", init_scale=..., ...): "cuda" is the default.
DEVICE_SCALERS = {
    "torch.amp.GradScaler",
    "torch.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
    # FSDP's scaler takes the same device-first arguments (default "cuda").
    "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
}
APEX_AMP = {"apex.amp.initialize", "apex.amp.scale_loss"}
APEX_MASTER_PARAMS = "apex.amp.master_params"
# apex's own checkpoint state: gone with apex, a NameError where a checkpoint saves or loads it.
APEX_STATE = ("apex.amp.state_dict", "apex.amp.load_state_dict")
# Atoms can take ``.backward()`` directly; anything else needs parentheses.
ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)


def _device_arg(call: ast.Call) -> tuple[bool, ast.expr | None]:
    """(known, device node) for the device-first GradScaler forms."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        kw.arg is None for kw in call.keywords
    ):
        return False, None
    return True, arg_or_keyword(call, 0, "device")


def _is_cuda_scaler(model: ScriptModel, call: ast.Call) -> bool:
    name = model.call_name(call)
    if name in CUDA_SCALERS:
        return True
    if name in DEVICE_SCALERS:
        known, device = _device_arg(call)
        return known and (device is None or is_cuda_string(device))
    return False


def _args_without_device(model: ScriptModel, call: ast.Call) -> list[str]:
    if model.call_name(call) in CUDA_SCALERS:
        return [model.segment(a) for a in call.args] + [model.segment(k) for k in call.keywords]
    args = [model.segment(a) for a in call.args[1:]]
    return args + [model.segment(k) for k in call.keywords if k.arg != "device"]


def _legacy_fix(model: ScriptModel, call: ast.Call) -> Fix:
    e = Emitter(model)
    name = f"{e.module('torch_xla.amp')}.GradScaler"
    ops: list[EditOp] = [Replace(model.span(call.func), name)]
    if model.call_name(call) in DEVICE_SCALERS:
        # torch_xla.amp.GradScaler has the torch.cuda.amp signature: no device.
        if keyword(call, "device") is not None:
            ops.append(RemoveKeyword(model.span(call), "device"))
        elif call.args:
            ops.append(SetArgs(model.span(call), ", ".join(_args_without_device(model, call))))
    return Fix(f"Use {name}", (*ops, *e.imports))


KEEP_TITLE = "Keep loss scaling on XLA"


def _xla_scaler_fix(model: ScriptModel, call: ast.Call) -> Fix:
    e = Emitter(model)
    args = ", ".join(['"xla"', *_args_without_device(model, call)])
    code = f"{e.torch}.amp.GradScaler({args})"
    # Keeps loss scaling (and its host read every step): the user chooses this over
    # removing the scaler, so it is never applied by fix-all.
    return Fix(
        f"{KEEP_TITLE}: {code}",
        (Replace(model.span(call), code), *e.imports),
        safe=False,
        review_reason="keeps loss scaling, which reads the host every step",
    )


def _scaler_statement(model: ScriptModel, call: ast.Call) -> tuple[str, ast.stmt] | None:
    """``(name, statement)`` when the constructor is assigned straight to one name."""
    stmt = model.parent(call)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.value is call:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is call:
        target = stmt.target
    else:
        return None
    return (target.id, stmt) if isinstance(target, ast.Name) else None


def _not_bound_reason(model: ScriptModel, call: ast.Call) -> str:
    """Why the constructor is not a plain ``scaler = GradScaler()`` the fix can drop."""
    parent = model.parent(call)
    if isinstance(parent, ast.IfExp):
        # ``scaler = GradScaler() if args.amp else None`` (held-out 37): its users test it.
        return (
            f"the scaler exists only when `{model.segment(parent.test)[:60]}` holds "
            "(a conditional expression), and the code that uses it tests which it got"
        )
    return "the scaler is not assigned straight to one name"


def _removal_ops(model: ScriptModel, name: str) -> tuple[list[EditOp], ast.AST | None]:
    """The edits that drop scaler ``name``, or the first use they cannot handle."""
    ops: list[EditOp] = []
    owned: set[int] = set()
    for assign in model.assignments.get(name, []):
        value = assign.value
        if not (isinstance(value, ast.Call) and _is_cuda_scaler(model, value)):
            return [], assign
        if _scaler_statement(model, value) is None:
            return [], assign
        ops.append(RemoveStatement(model.span(assign)))
        owned.update(id(n) for n in ast.walk(assign))
    for node in model.name_nodes(name):
        if id(node) in owned:
            continue
        op = _use_op(model, node)
        if op is None:
            return [], node
        ops.append(op)
    return ops, None


def _use_op(model: ScriptModel, node: ast.Name) -> EditOp | None:
    attr = model.parent(node)
    call = model.parent(attr) if attr is not None else None
    if not (
        isinstance(node.ctx, ast.Load)
        and isinstance(attr, ast.Attribute)
        and isinstance(call, ast.Call)
        and call.func is attr
    ):
        return None
    if attr.attr == "scale" and len(call.args) == 1 and not call.keywords:
        loss = call.args[0]
        if isinstance(loss, ast.Starred):
            return None
        code = model.segment(loss)
        return Replace(model.span(call), code if isinstance(loss, ATOMS) else f"({code})")
    if attr.attr == "step" and call.args and not isinstance(call.args[0], ast.Starred):
        rest = [model.segment(a) for a in call.args[1:]] + [model.segment(k) for k in call.keywords]
        opt = model.segment(call.args[0])
        if not isinstance(call.args[0], ATOMS):
            opt = f"({opt})"
        return Replace(model.span(call), f"{opt}.step({', '.join(rest)})")
    if attr.attr in {"update", "unscale_"}:
        stmt = model.parent(call)
        if isinstance(stmt, ast.Expr):
            return RemoveStatement(model.span(stmt))
    return None


def _cuda_autocast_kept(model: ScriptModel) -> int | None:
    """The line of a CUDA autocast that Convert leaves as it is (XLA102's fix needs review or
    is silenced): the scaler it relies on must then stay too."""
    for f in final_findings(model, AUTOCAST_RULE, autocast_check, "modern"):
        if f.message.startswith(AUTOCAST_MESSAGE_START) and (f.fix is None or not f.fix.safe):
            return f.span.start.line + 1
    return None


def _modern(model: ScriptModel, call: ast.Call) -> tuple[Fix | None, str | None]:
    """The removal fix, or (the GradScaler("xla") quick fix, why removal is not safe)."""
    bound = _scaler_statement(model, call)
    if bound is None:
        why = _not_bound_reason(model, call)
    else:
        # Every scaler bound to one name shares these (a big script repeats `scaler = ...`):
        # computed once per name, each use of the name looked at once.
        name = bound[0]
        ops, blocker = model.memo((_removal_ops, name), lambda: _removal_ops(model, name))
        fp16 = float16_uses(model)
        if blocker is None and fp16:
            node, why = fp16[0]
            reason = (
                f"line {line_ref(node.lineno)}: {why}; without loss scaling float16 gradients can "  # type: ignore[attr-defined]
                "underflow, and the CUDA scaler left as it is reads the host every step (where "
                "torch_xla is installed it stays on and scales the XLA tensors, measured)"
            )
            fix = _xla_scaler_fix(model, call)
            fix = replace(fix, review_reason=f"{reason} (this keeps loss scaling on XLA)")
            manual = (
                f'review: {reason}. Keep loss scaling with `torch.amp.GradScaler("xla")`, or '
                "switch the autocast to bfloat16 and remove the scaler"
            )
            return fix, manual
        kept = _cuda_autocast_kept(model) if blocker is None else None
        # The caller's device decides first: it is why XLA102's autocast change is held back.
        caller = device_from_caller(model, "modern") if kept is not None else None
        if kept is not None:
            reason = caller or (
                f"the CUDA autocast at line {line_ref(kept)} stays (XLA102's change there is not applied "
                "automatically): on CUDA its float16 gradients need the scaler"
            )
            fix = Fix(
                "Remove the GradScaler: bf16 needs no loss scaling",
                tuple(ops),
                safe=False,
                review_reason=reason,
            )
            return fix, f"review: {reason}"
        if blocker is None:
            return Fix("Remove the GradScaler: bf16 needs no loss scaling", tuple(ops)), None
        why = (
            f"`{bound[0]}` is used beyond scale/step/update/unscale_ "
            f"(line {line_ref(blocker.lineno)}: `{model.line_text(blocker.lineno - 1).strip()}`)"
        )
    manual = (
        f"Removing the scaler is not automatic here: {why}. With bf16 autocast remove it by "
        "hand (`scaler.scale(loss).backward()` → `loss.backward()`, `scaler.step(opt)` → "
        '`opt.step()`, drop `scaler.update()`), or keep loss scaling with `torch.amp.GradScaler("xla")`, '
        "which reads the host every step"
    )
    fix = _xla_scaler_fix(model, call)
    # The message recommends removal; say why the fix offered keeps the scaler instead.
    reason = f"removing the scaler is not automatic here: {why}; this {fix.review_reason}"
    return replace(fix, review_reason=reason), manual


def _apex(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    """NVIDIA apex AMP (``amp.initialize`` / ``amp.scale_loss``) is CUDA-only. Its precision is
    the ``opt_level`` of ``amp.initialize``: "O0" is plain fp32 (held-out 22 r4, hysts'
    default), where the faithful conversion drops apex and adds no autocast (bf16 would change
    the numbers the script trains with)."""
    calls = list(model.calls_to(*APEX_AMP))
    level = _opt_level(model, calls)
    for call in calls:
        what = "amp." + (model.call_name(call) or "").rpartition(".")[2]
        autocast = (
            "torch_xla.amp.autocast"
            if ctx.target == "legacy"
            else 'torch.autocast("xla", dtype=torch.bfloat16)'
        )
        mixed = f"on XLA use {autocast} around the forward pass" + (
            " and torch_xla.amp.GradScaler"
            if ctx.target == "legacy"
            else " (bf16 needs no loss scaling)"
        )
        backward = (
            "call loss.backward() instead of "
            "`with amp.scale_loss(loss, opt) as scaled: scaled.backward()`"
        )
        if level == "O0":
            message = (
                f'apex AMP ({what}) is CUDA-only; its opt_level "O0" is plain fp32: on XLA drop '
                "apex and add no autocast (that would change the precision)"
            )
            manual = (
                f"drop amp.initialize (keep the model and optimizers as they are) and {backward}"
            )
        else:
            message = f"apex AMP ({what}) is CUDA-only: {mixed}"
            manual = (
                "drop amp.initialize (keep the model and optimizers as they are), wrap the "
                f"forward pass in {autocast}, and {backward}"
            )
            if level is None:
                message += (
                    '; its opt_level is set out of sight: with "O0" (plain fp32) drop apex and '
                    "add no autocast"
                )
                manual += '; with opt_level "O0" (plain fp32) add no autocast'
        masters = sorted({c.lineno for c in model.calls_to(APEX_MASTER_PARAMS)})
        if masters:
            # ``clip_grad_norm_(amp.master_params(optimizer), ...)`` (held-out 59's ATLOP):
            # apex gone, it is a NameError; without amp the parameters are the master ones.
            lines = ", ".join(line_ref(n) for n in masters)
            manual += (
                f"; and replace amp.master_params(optimizer) (line {lines}) with the "
                "parameters it holds (`model.parameters()`)"
            )
        states = sorted({c.lineno for c in model.calls_to(*APEX_STATE)})
        if states:
            # BYOL-PyTorch (held-out 119) saves ``'amp': amp.state_dict()`` in its checkpoint
            # and restores it with ``amp.load_state_dict(checkpoint['amp'])``.
            lines = ", ".join(line_ref(n) for n in states)
            manual += (
                f"; and drop apex's checkpoint state, amp.state_dict() / amp.load_state_dict() "
                f"(line{'s' * (len(states) > 1)} {lines}): without apex there is none to save "
                "or restore"
            )
        yield Finding(CODE, message, model.span(call), Severity.WARNING, manual=manual)
    if not calls:
        return
    # Its own site too (DialoGPT, held-out 122: only amp.initialize's advice named it).
    for call in model.calls_to(APEX_MASTER_PARAMS):
        yield Finding(
            CODE,
            f"`{model.segment(call)}` is apex AMP's fp32 master copy of the parameters: "
            "without apex it is a NameError",
            model.span(call),
            Severity.WARNING,
            manual="once apex AMP is dropped, pass the parameters it holds (`model.parameters()`)",
        )


def _opt_level(model: ScriptModel, calls: list[ast.Call]) -> str | None:
    """The literal ``opt_level`` of the script's ``amp.initialize`` ("O1" when it passes none,
    apex's default), or None when it is not written here."""
    for call in calls:
        if (model.call_name(call) or "").endswith(".initialize"):
            kw = keyword(call, "opt_level")
            if kw is None:
                return "O1"
            value = kw.value
            return (
                value.value
                if isinstance(value, ast.Constant) and isinstance(value.value, str)
                else None
            )
    return None


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _apex(model, ctx)
    autocast = (
        "torch_xla.amp.autocast"
        if ctx.target == "legacy"
        else 'torch.autocast("xla", dtype=torch.bfloat16)'
    )
    yield from apex_fp16_utils_findings(model, CODE, autocast)
    yield from manual_loss_scaling(model, CODE)
    yield from timm_scaler_findings(model, CODE)
    for call in model.calls:
        if not _is_cuda_scaler(model, call):
            continue
        if ctx.target == "legacy":
            fix, manual = _legacy_fix(model, call), None
            message = "CUDA GradScaler: on XLA the loss scaler is torch_xla.amp.GradScaler"
        else:
            fix, manual = _modern(model, call)
            message = (
                "CUDA GradScaler: with bf16 autocast on XLA no loss scaling is needed; "
                "remove the scaler (loss.backward(), optimizer.step())"
            )
            if fix is not None and fix.title.startswith(KEEP_TITLE):
                # The fix offered keeps the scaler: the message must not say the opposite
                # (held-out 58: "remove the scaler" above "Keep loss scaling on XLA").
                message = (
                    "CUDA GradScaler: with bf16 autocast on XLA no loss scaling is needed, but "
                    "this scaler cannot be removed automatically; the fix keeps loss scaling "
                    'on XLA instead (torch.amp.GradScaler("xla"))'
                )
        if fix is not None and fix.safe and (why := device_from_caller(model, ctx.target)):
            # Dropped (or made an XLA scaler) under a caller that runs the class on CUDA,
            # fp16 there would lose its loss scaling.
            fix = replace(fix, safe=False, review_reason=why)
            manual = f"review: {why}"
        yield Finding(CODE, message, model.span(call), Severity.WARNING, fix=fix, manual=manual)


HOVER = """\
**XLA103 · CUDA GradScaler**

A CUDA `GradScaler` scales the loss so fp16 gradients do not underflow. On XLA:

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | no scaler: bf16 autocast needs no loss scaling (`torch.amp.GradScaler("xla")` exists but reads the host every step) |
| legacy (1.13, SageMaker Training Compiler) | `torch_xla.amp.GradScaler(...)` (same arguments) |

Modern fix: `scaler = GradScaler()` is removed, `scaler.scale(loss).backward()` →
`loss.backward()`, `scaler.step(opt)` → `opt.step()`, `scaler.update()` / `scaler.unscale_(opt)`
are dropped (their comments stay) — only when the scaler is used in no other way (a
checkpointed `scaler.state_dict()` needs a hand edit). The removal is safe only when the
script runs in bfloat16 after conversion: an autocast with an explicit or unknown float16
dtype, `.half()` or `torch.float16` leaves float16 without loss scaling, so the fix is then
marked for review. `torch_xla.amp.GradScaler` was removed in torch_xla 2.x.
"""

RULE = Rule(
    code=CODE,
    name="grad-scaler",
    category=Category.CONVERSION,
    summary="CUDA GradScaler → torch_xla.amp.GradScaler (legacy) or no loss scaling with bf16 (modern)",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.cuda.amp.GradScaler": HOVER,
        "torch.amp.GradScaler": HOVER,
        "torch.GradScaler": HOVER,
        ".unscale_": HOVER,
    },
)
