"""XLA204 on a script that starts its own workers with ``torch.multiprocessing.spawn``:
convert that launcher to the XLA one. Both ``torch_xla.launch(fn, args=(), start_method=...)``
and ``xmp.spawn(fn, args=(), nprocs=None, start_method=...)`` call ``fn(index, *args)`` as
mp.spawn does, so the args tuple (keyword or positional) goes on unchanged: dropping it makes
every replica raise TypeError (missing positional argument), verified on torch_xla 2.9.
"""

from __future__ import annotations

import ast

from ...semantic import xla_api
from ...semantic.model import Emitter, ScriptModel
from ..base import Finding, Fix, Replace, RuleContext, Severity
from .spawn_device_count import device_count_args

CODE = "XLA204"
SPAWN_CALLS = {"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"}


# torch.multiprocessing.spawn / start_processes, positional order.
SPAWN_PARAMS = ("fn", "args", "nprocs", "join", "daemon", "start_method")


def _spawn_argument(call: ast.Call, name: str) -> ast.expr | None:
    kw = next((k for k in call.keywords if k.arg == name), None)
    if kw is not None:
        return kw.value
    i = SPAWN_PARAMS.index(name)
    return call.args[i] if len(call.args) > i else None


def _signature_mismatch(model: ScriptModel, fn: ast.expr | None, args: ast.expr | None) -> str:
    """Why ``fn(index, *args)`` cannot bind (both launchers call it so), or "" when it can or
    the function or the tuple is not visible here."""
    target = model.functions.get(fn.id) if isinstance(fn, ast.Name) else None
    if target is None or not (args is None or isinstance(args, ast.Tuple)):
        return ""
    elts = args.elts if isinstance(args, ast.Tuple) else []
    if any(isinstance(e, ast.Starred) for e in elts):
        return ""
    a = target.args
    positional = [*a.posonlyargs, *a.args]
    given = 1 + len(elts)
    required = len(positional) - len(a.defaults)
    if required <= given and (given <= len(positional) or a.vararg is not None):
        return ""
    return (
        f"{target.name}() cannot be called as {target.name}(index, *args) with "
        f"{len(elts)} arguments after the index: it takes {len(positional)} positional "
        "parameters (the first one is the process index)"
    )


def _branch(model: ScriptModel, node: ast.AST) -> str:
    """Which branch of an ``if`` holds ``node`` in its function: "" when none."""
    child = node
    for parent in model.ancestors(node):
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            break
        if isinstance(parent, ast.If) and child is not parent.test:
            test = model.segment(parent.test)[:60]
            if child in parent.orelse:
                return f"in the `else:` of `if {test}`"
            return f"under `if {test}`"
        child = parent
    return ""


def spawn_findings(model: ScriptModel, ctx: RuleContext) -> list[Finding]:
    out = []
    for call in model.calls:
        if model.call_name(call) not in SPAWN_CALLS:
            continue
        fn = call.args[0] if call.args else None
        fn_text = model.segment(fn) if fn is not None else "fn"
        message = (
            "torch.multiprocessing.spawn starts CUDA worker processes: on XLA the launcher "
            f"is {xla_api.launch(Emitter(model), ctx.target, fn_text).split('(')[0]}, which "
            f"calls {fn_text}(index, *args) in one process per XLA device"
        )
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            out.append(
                Finding(
                    CODE,
                    message,
                    model.span(call),
                    Severity.WARNING,
                    manual=f"start {fn_text} with the XLA launcher and pass the same args tuple "
                    "as args=(...) (the *args / **kwargs here are not visible to the analysis)",
                )
            )
            continue
        args = _spawn_argument(call, "args")
        mismatch = _signature_mismatch(model, fn, args)
        if mismatch:
            out.append(
                Finding(
                    CODE,
                    f"{message}; {mismatch}",
                    model.span(call),
                    Severity.WARNING,
                    manual=f"make {fn_text} take (index, *args) for the args tuple given here "
                    f"({len(args.elts) if isinstance(args, ast.Tuple) else 0} arguments after "
                    "the index), then start it with the XLA launcher, args=(...)",
                )
            )
            continue
        e = Emitter(model)
        code = xla_api.launch(e, ctx.target, fn_text)
        # Both launchers call fn(index, *args) like mp.spawn: the tuple goes on unchanged.
        extra = [f"args={model.segment(args)}"] if args is not None else []
        start_method = _spawn_argument(call, "start_method")
        if start_method is not None:
            extra.append(f"start_method={model.segment(start_method)}")
        if extra:
            code = f"{code[:-1]}, {', '.join(extra)})"
        reason = (
            "the XLA launcher starts one process per XLA device, not nprocs; check the "
            "spawned function does not derive ranks or devices from CUDA"
        )
        join = _spawn_argument(call, "join")
        if join is not None and not (isinstance(join, ast.Constant) and join.value is True):
            reason += (
                "; join=False here: the XLA launcher waits for the replicas and returns no "
                "process context"
            )
        counts = device_count_args(model, ctx, call, args, _spawn_argument(call, "nprocs"), e)
        if counts.blocked:
            # A launch fix would carry the parent's 0-derived values into every replica.
            out.append(
                Finding(
                    CODE,
                    f"{message}; the parent computes from the CUDA device count (0 on an XLA "
                    f"host) at {counts.blocked}, and what it computes reaches {fn_text}()",
                    model.span(call),
                    Severity.WARNING,
                    manual=f"compute those values inside {fn_text}() from "
                    f"{xla_api.world_size(Emitter(model), ctx.target)} (the XLA launcher starts "
                    f"one process per device), then start it with {code}",
                )
            )
            continue
        if counts.note:
            reason += f"; {counts.note}"
        branch = _branch(model, call)
        if branch:
            reason += (
                f"; this launch runs only {branch}: otherwise the script runs in this one "
                "process, without the launcher"
            )
        out.append(
            Finding(
                CODE,
                f"{message} (fix needs review: {reason})",
                model.span(call),
                Severity.WARNING,
                fix=Fix(
                    f"Launch with {code}",
                    (Replace(model.span(call), code), *counts.ops, *e.imports),
                    safe=False,
                    review_reason=reason,
                ),
            )
        )
    return out
