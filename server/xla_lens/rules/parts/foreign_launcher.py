"""Who starts the processes once `fix` is done: torch_xla's launcher, or another one.

XLA202 and XLA203 write the XLA runtime's rank answers (``xr.global_ordinal()``,
``xr.local_ordinal()``, ``xr.world_size()``). Those number the processes only when torch_xla
started them (``torch_xla.launch`` / ``xmp.spawn``), or under torchrun once an ``xla://``
process group is built on a runtime that takes torchrun's LOCAL_RANK/LOCAL_WORLD_SIZE (not
PJRT CPU: under torchrun both processes still answer ordinal 0 of 1 after
``init_process_group("xla", init_method="xla://")``, torch_xla 2.9, so this module does not
count on it). Under ``torch.multiprocessing.spawn`` or torchrun every process may be a world of
its own: ordinal 0, world size 1 (verified on torch_xla 2.9, PJRT CPU: a converted torchrun
script gave both processes rank 0 of 1, a converted mp.spawn script gave both all 8 samples). So a rewrite that is safe under the
XLA launcher silently turns the replicas into independent copies, each reading all the data.

The launcher the script ends up with: one it calls (mp.spawn, whose XLA204 fix is for review,
or torch_xla's), the one XLA204's *safe* fix adds (the ``_mp_fn`` wrap, as the engine finally
applies it), or, for a distributed script with neither, torchrun (what sets the variables it
reads). XLA204 asks XLA202 in turn which env reads its safe fixes rewrite (a replica that
reads ``os.environ["RANK"]`` fails under the XLA launcher): the two fixes go together, so
while this module asks XLA204, XLA202 is answered as if the launcher were torch_xla's.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from ...semantic.launch import ENTRY, XLA_LAUNCHERS, has_own_launcher
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ...semantic.workspace_callers import workspace_callers
from ...semantic.xla_process_group import INIT, makes_xla_group
from ..base import Finding, RuleContext, Target, message_as_written, review_reason_as_written
from ..xla204_mp_fn import check as launch_check
from .final_fixes import final_findings
from .spawn_launch import SPAWN_CALLS

_ASKING = "_xla_lens_asking_launcher"


@dataclass(frozen=True)
class ForeignLauncher:
    """The launcher that is not torch_xla's; ``torchrun``: no launcher in this file (an
    ``xla://`` group built first then makes the runtime's answers right)."""

    name: str
    torchrun: bool


def foreign_launcher(model: ScriptModel, target: Target) -> ForeignLauncher | None:
    if model.__dict__.get(_ASKING):
        return None  # asked back through XLA204: its fix and the rewrites go together
    return model.memo(("foreign_launcher", target), lambda: _foreign_launcher(model, target))


def _foreign_launcher(model: ScriptModel, target: Target) -> ForeignLauncher | None:
    if has_own_launcher(model):
        return None  # accelerate / Lightning start the XLA processes themselves
    spawns = [c for c in model.calls if model.call_name(c) in SPAWN_CALLS]
    launched = ENTRY in model.steps.module_functions or any(
        model.call_name(c) in XLA_LAUNCHERS for c in model.calls
    )
    if not spawns and (launched or not model.is_distributed):
        return None
    safe = {f.span for f in _launcher_findings(model, target) if f.fix and f.fix.safe}
    for call in spawns:
        if model.span(call) not in safe:
            return ForeignLauncher(
                f"torch.multiprocessing.spawn (line {line_ref(call.lineno)}{_when(model, call)})",
                False,
            )
    if spawns or safe:
        return None
    return ForeignLauncher(
        "torchrun (or whatever starts this script: it has no launcher of its own, and no "
        "safe fix adds torch_xla's)",
        True,
    )


def _when(model: ScriptModel, call: ast.Call) -> str:
    """``, when `args.rigid_launch`; otherwise whatever starts the script`` for a spawn under
    an ``if`` (held-out 61's ddpm-torch: mp.spawn only with --rigid-launch, torchrun else)."""
    child: ast.AST = call
    for parent in model.ancestors(call):
        if isinstance(parent, ast.If) and "__name__" not in model.segment(parent.test):
            test = model.segment(parent.test)[:60]
            side = f"`{test}`" if child in parent.body else f"not `{test}`"
            return f", when {side}; otherwise whatever starts the script, torchrun perhaps"
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
            return ""
        child = parent
    return ""


def _launcher_findings(model: ScriptModel, target: Target) -> list[Finding]:
    model.__dict__[_ASKING] = True
    try:
        return final_findings(model, "XLA204", launch_check, target)
    finally:
        model.__dict__[_ASKING] = False


def env_rendezvous_reason(model: ScriptModel, target: Target) -> str:
    """Why starting this script with torch_xla's launcher (XLA204's ``_mp_fn`` wrap) makes it
    fail at start ("" when it does not): a process group whose rendezvous is not xla:// (env://
    by default, any backend) reads RANK/WORLD_SIZE/MASTER_ADDR, which that launcher does not set
    ("environment variable RANK expected, but not set", torch_xla 2.9). Counted as fine: a call
    that already uses xla://, or one XLA205's safe fix gives xla:// (asked as if the launcher
    were torch_xla's: the two fixes go together)."""
    from ..xla205_ddp_backend import check as backend_check  # XLA205 asks this module

    if target == "legacy":
        return ""  # torch_xla 1.13 documents init_process_group("xla") under xmp.spawn
    calls = [c for c in model.calls_to(INIT) if not makes_xla_group(model, c, True)]
    if not calls:
        return ""
    asking = model.__dict__.get(_ASKING, False)
    model.__dict__[_ASKING] = True
    try:
        fixed = {
            f.span.start.line
            for f in backend_check(model, RuleContext(target))
            if f.fix is not None
            and f.fix.safe
            and not model.silenced(f.code, f.span.start.line, f.span.end.line)
            and any("xla://" in getattr(op, "code", "") for op in f.fix.ops)
        }
    finally:
        model.__dict__[_ASKING] = asking
    left = [c for c in calls if not any(c.lineno - 1 <= ln < c.end_lineno for ln in fixed)]  # type: ignore[operator]
    if not left:
        return ""
    return (
        f"the process group at line {line_ref(left[0].lineno)} rendezvouses by env:// or an address "
        "(RANK, WORLD_SIZE, MASTER_ADDR), which torch_xla's launcher does not set: started by "
        'it, the script fails at start ("environment variable RANK expected"); give the group '
        'init_method="xla://" (and the "xla" backend) first'
    )


def launcher_reason(model: ScriptModel, node: ast.AST, target: Target) -> str:
    """Why a fix writing the runtime's ranks at ``node`` changes what the program means under
    the launcher that starts it ("" when torch_xla's does, or an xla:// group exists)."""
    launcher = foreign_launcher(model, target)
    if launcher is None:
        return ""
    reason = (
        f"the processes are started by {launcher.name}, not by torch_xla's launcher: the "
        "XLA runtime then gives every process ordinal 0 and world size 1 (independent "
        "replicas, each reading all the data)"
    )
    if not launcher.torchrun:
        return f"{reason}; start them with torch_xla.launch first (XLA204)"
    reason = (
        f"the processes are started by {launcher.name}, not by torch_xla's launcher: the XLA "
        "runtime numbers them as torchrun does only where torch_xla's xla:// rendezvous sets "
        "the device runtime up for torchrun before anything uses the XLA device (TPU, "
        "Neuron); elsewhere every process gets ordinal 0 and world size 1 (measured on PJRT "
        "CPU: independent replicas, each reading all the data)"
    )
    # Not even after init_process_group("xla", init_method="xla://"): torchrun's ranks reach
    # the runtime only on runtimes that take them (PJRT CPU under torchrun, torch_xla 2.9:
    # both processes still answer ordinal 0 of 1 after that group is built).
    init = next(iter(model.calls_to(INIT)), None)
    group = (
        f" (the process group at line {line_ref(init.lineno)} numbers them as torchrun does: keep "
        "reading ranks from it or from torchrun's variables)"
        if init is not None
        else ""
    )
    return (
        f"{reason}{group}; whether the runtime takes torchrun's ranks depends on the device "
        "runtime: launch with _mp_fn and torch_xla.launch (XLA204) to make them the script's"
    )


def group_launcher_reason(model: ScriptModel, target: Target, call: ast.Call | None = None) -> str:
    """Why giving a process group the "xla" backend changes what the program means under the
    launcher that starts it ("" under torch_xla's). Measured on PJRT CPU, torch_xla 2.9, two
    processes under torchrun each all-reducing rank + 1: with env:// they got 1.0 and 2.0 (no
    reduction, no error: each process reduces over its own device only); with xla:// both
    said rank 0 of 1. Under torch_xla.launch the xla:// group numbers them 0 and 1 of 2 (on
    PJRT CPU its replicas are threads of one process sharing one default group, where a
    dist.all_reduce stalls: a runtime caveat, see semantic/xla_process_group.py)."""
    launcher = foreign_launcher(model, target)
    if launcher is None:
        return ""
    if launcher.torchrun and not _has_main_guard(model):
        # A module of helpers (no main block): the modules that call it start the processes.
        return _callers_reason(model, call)
    xla_url = (
        "with xla:// only where torch_xla's rendezvous sets the device runtime up for "
        "torchrun before anything uses the XLA device (TPU, Neuron; on PJRT CPU every process "
        "is rank 0 of 1, measured)"
        if launcher.torchrun
        else "with xla:// every process is rank 0 of 1"
    )
    return (
        f"the processes are started by {launcher.name}, not by torch_xla's launcher: there "
        'the "xla" backend does not reduce across them with env:// (each all_reduce keeps '
        f"its own value, silently), and {xla_url}; start them with torch_xla.launch first "
        "(XLA204)"
    )


def _callers_reason(model: ScriptModel, call: ast.Call | None) -> str:
    """Why the "xla" backend in a module of helpers needs review: "" when every module of
    the workspace that calls the function building the group starts its processes with
    torch_xla's launcher."""
    fn = (
        next(
            (
                a
                for a in model.ancestors(call)
                if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)
            ),
            None,
        )
        if call is not None
        else None
    )
    if fn is None:
        return ""  # built when the module is imported: as before, its importer decides
    callers = workspace_callers(model, fn.name)
    if not callers:
        return (
            f"no caller of `{fn.name}` was found beside this module: whatever starts the "
            'processes decides whether the "xla" backend reduces across them (under torchrun '
            "it does not, silently); check that torch_xla's launcher starts them"
        )
    foreign = [c for c in callers if not c.xla_launched]
    if not foreign:
        return ""
    return (
        f"{foreign[0].path.name} calls `{fn.name}` and does not start its processes with "
        'torch_xla\'s launcher: there the "xla" backend does not reduce across them (under '
        "torchrun each all_reduce keeps its own value, silently); convert it first (XLA204)"
    )


def _has_main_guard(model: ScriptModel) -> bool:
    return model.memo(
        _has_main_guard,
        lambda: any(
            isinstance(s, ast.If) and "__name__" in ast.unparse(s.test) for s in model.tree.body
        ),
    )


def review_under_launcher(
    model: ScriptModel,
    finding: Finding,
    node: ast.AST,
    target: Target,
    reason: str | None = None,
) -> Finding:
    """``finding`` with its fix offered for review when the launcher is not torch_xla's;
    ``reason``: the rule's own account of that (default: the runtime's rank answers')."""
    fix = finding.fix
    if fix is None:
        return finding
    if reason is None:
        reason = launcher_reason(model, node, target)
    if not reason:
        return finding
    if not fix.safe:
        written = review_reason_as_written(fix)
        reason = f"{written}; also {reason}"
        message = message_as_written(finding).replace(written, reason)
    else:
        message = f"{message_as_written(finding)} (fix needs review: {reason})"
    return replace(finding, message=message, fix=replace(fix, safe=False, review_reason=reason))


__all__ = [
    "ForeignLauncher",
    "env_rendezvous_reason",
    "foreign_launcher",
    "group_launcher_reason",
    "launcher_reason",
    "review_under_launcher",
]
