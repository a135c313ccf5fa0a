"""A conversion must not touch the XLA runtime in the launcher's parent process.

Several rules write XLA runtime calls (``torch_xla.device()``, ``xr.world_size()``, ...).
Each is right where a replica runs it, and fatal where the parent runs it before
``torch_xla.launch`` (the launch then raises "Runtime is already initialized"). Whether a spot
is parent code depends on the launcher the whole conversion ends up with (XLA204 may add
one), so this check runs once over all findings instead of in every rule: a safe fix that
would put a runtime call in parent code of a launched script becomes a fix for review (for
a rule whose fix only reads the runtime, no fix). The engine runs it over every finding; a
rule whose fix is safe only once XLA101's fix makes the device XLA (``device_after_fixes``)
runs it over XLA101's and XLA204's, so it never counts on a device fix this check holds back.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from ...semantic.launch import (
    LAUNCHERS,
    PARENT_REVIEW,
    XLA_LAUNCHERS,
    FunctionNode,
    awaits_launcher,
    emits_runtime_call,
    enclosing_functions_at,
    is_launched,
    launch_targets,
    parent_functions,
    replica_functions,
    runs_in_parent,
)
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ...semantic.node_helpers import main_guard
from ..base import (
    Finding,
    Fix,
    ReplaceStatement,
    manual_as_written,
    message_as_written,
    review_reason_as_written,
)
from ..xla204_mp_fn import guard_entry, training_stays_in_guard
from .helper_parent_calls import review_helper_runtime_fixes

LAUNCHER_RULE = "XLA204"
# Rules whose fix only reads the runtime (XLA202's xr.world_size()): in parent code no version
# of it is right, so the finding keeps no fix there; as a review fix, ``--unsafe-fixes`` would
# still write the crash.
READ_ONLY_RULES = frozenset({"XLA202"})
# Seeding the XLA device in the parent crashes the launch (measured on torch_xla 2.9:
# ``torch_xla.manual_seed(1)`` before ``torch_xla.launch`` raises "Runtime is already
# initialized"), and a CUDA seed there never reached the spawned replicas' devices either: the
# right seed is one in the replica's function, which no local rewrite writes. So no fix there
# (held-out 49, semseg's main() seeding before mp.spawn).
SEED_CALLS = ("manual_seed(", "set_rng_state(")
PARENT_SEED_MANUAL = (
    "Seed the XLA device at the start of the function each replica runs (the spawned function "
    "or _mp_fn) with {seed}, not here: this runs in the launcher's parent, which must not "
    "touch the XLA runtime before the launch, or torch_xla refuses to start ('Runtime is "
    "already initialized'). A path of this process that trains without the launcher needs "
    "the same seed where its training starts."
)
SENTINEL_NOTE = re.compile(r"the default (\S+) marks a run without torchrun")
PARENT_MANUAL = (
    "read it inside the function each replica runs (the spawned function or _mp_fn), not here: "
    "the launcher's parent must not touch the XLA runtime before the launch, or torch_xla "
    "refuses to start ('Runtime is already initialized. Do not use the XLA device before "
    "calling xmp.spawn')"
)
PARENT_QUERY_MANUAL = (
    "Not here: this runs in the launcher's parent process, which must not touch the XLA "
    "runtime before the launch, or torch_xla refuses to start ('Runtime is already "
    "initialized'); torch_xla.launch starts one process per device by itself, so the parent "
    "needs no count. Inside the launched function: {advice}"
)


# A script with no launcher yet (torchrun or a cluster starts it today): the parent exists only
# once XLA204's launcher is in, and the messages say so rather than state it (held-out 38).
AWAITED = "once torch_xla's launcher starts the replicas (XLA204), "


def _in_parent_words(awaiting: bool) -> str:
    if awaiting:
        return AWAITED + "it runs in the launcher's parent process (line {line})"
    return "it runs in the launcher's parent process (line {line})"


def _parent_review(awaiting: bool) -> str:
    return AWAITED + PARENT_REVIEW if awaiting else PARENT_REVIEW


def _runtime_sites(fix: Fix) -> list[int]:
    """0-based lines where the fix writes a runtime call."""
    lines = []
    for op in fix.ops:
        code = getattr(op, "code", None)
        span = getattr(op, "span", None)
        if isinstance(code, str) and span is not None and emits_runtime_call(code):
            lines.append(span.start.line)
    return lines


def _wraps_entry(fix: Fix) -> bool:
    """Whether an XLA204 fix adds ``_mp_fn`` around the main guard's entry function (the
    other XLA204 fix swaps ``mp.spawn(fn)`` for the XLA launcher: ``fn`` stays the target,
    and the function that calls the launcher stays parent code)."""
    return any(isinstance(op, ReplaceStatement) for op in fix.ops)


def _seed_written(fix: Fix) -> str | None:
    """The XLA seed call ``fix`` writes (None when it writes none)."""
    for op in fix.ops:
        code = getattr(op, "code", None)
        if (
            isinstance(code, str)
            and emits_runtime_call(code)
            and any(s in code for s in SEED_CALLS)
        ):
            return code.strip()
    return None


def _without_seed_fix(f: Finding, seed: str, where: str, line: int) -> Finding:
    message = message_as_written(f)
    for cut in (" (the fix needs review:", " (fix needs review:"):
        message = message.partition(cut)[0]
    where = where.format(line=line_ref(line + 1))
    return replace(
        f,
        message=f"{message} (no fix here: {where})",
        fix=None,
        manual=PARENT_SEED_MANUAL.format(seed=seed.splitlines()[0]),
    )


def _touches_runtime_already(model: ScriptModel, f: Finding) -> bool:
    """The reported code calls the XLA runtime itself (``xm.xla_device()`` that XLA501
    renames): its fix changes nothing about when the parent touches the runtime."""
    lines = model.source.splitlines()[f.span.start.line : f.span.end.line + 1]
    return emits_runtime_call("\n".join(lines))


def review_parent_runtime_fixes(model: ScriptModel, findings: list[Finding]) -> list[Finding]:
    launcher_fixes = [f.fix for f in findings if f.code == LAUNCHER_RULE and f.fix is not None]
    awaiting = awaits_launcher(model)
    if not (launcher_fixes or is_launched(model) or awaiting):
        # No launcher here: another module's may run this file's helpers in its parent.
        return review_helper_runtime_fixes(model, findings)
    # A script awaiting its launcher gets it around the guard's entry (XLA204's fix, offered
    # or not: a later fixpoint round, after this one's torch_xla imports, no longer offers it).
    wraps = awaiting or any(_wraps_entry(fx) for fx in launcher_fixes)
    wrapped = guard_entry(model) if wraps else None
    moving: ast.If | None = None
    if awaiting and wrapped is None:
        # No entry to wrap yet (the training sits in the __main__ block or at module level):
        # XLA204 asks for the block to move into a function the launcher starts. Module-level
        # code stays the parent's whatever the user writes; functions are left to that move,
        # and so is a main block that runs the training itself: its code moves with it.
        replicas: set[FunctionNode] = set(model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef))  # type: ignore[arg-type]
        parents: set[FunctionNode] = set()
        guard = main_guard(model.tree)
        # (Also a block that drives the training through calls a launcher cannot wrap, an
        # epoch loop calling train_epoch(): held-out 50's baby-llama2, where XLA204 asks for
        # the same move.)
        moving = guard if guard is not None and training_stays_in_guard(model, guard) else None
    else:
        replicas = replica_functions(model, launch_targets(model, wrapped))
        parents = parent_functions(model, wrapped)

    # ``_mp_fn`` for a launcher outside the file (xla_spawn.py imports it and spawns
    # ``_mp_fn``): the parent runs the module's top level only, and a function no path from
    # there reaches (a property read in a replica, ``args.device``) is no parent code.
    external = not wraps and not any(model.call_name(c) in LAUNCHERS for c in model.calls)

    def in_parent(line: int) -> bool:
        if moving is not None and moving.lineno <= line <= (moving.end_lineno or moving.lineno):
            return False
        if external:
            enclosing = enclosing_functions_at(model, line)
            if enclosing and not any(fn in parents for fn in enclosing):
                return False
        return runs_in_parent(model, line, replicas, parents)

    xla_launched = not awaiting and any(model.call_name(c) in XLA_LAUNCHERS for c in model.calls)
    out = []
    for f in findings:
        if (
            f.fix is None
            and f.manual
            and emits_runtime_call(f.manual)
            and in_parent(f.span.start.line + 1)
        ):
            # Advice naming a runtime query (XLA403's `xr.world_size()` for a CUDA device
            # count) would crash the launch where the parent follows it.
            manual = PARENT_QUERY_MANUAL.format(advice=manual_as_written(f))
            if awaiting:
                manual = manual.replace(
                    "this runs in the launcher's parent", AWAITED + "this runs in its parent"
                )
            f = replace(f, manual=manual)
        # Fixes write next to what they report: only a finding in parent code can put a
        # runtime call there, and checking that first keeps lazily built fixes lazy.
        if (
            f.fix is not None
            and (f.fix.safe or f.code in READ_ONLY_RULES)
            and f.code != LAUNCHER_RULE
            and in_parent(f.span.start.line + 1)
        ):
            parent = [ln for ln in _runtime_sites(f.fix) if in_parent(ln + 1)]
            if parent and (seed := _seed_written(f.fix)) is not None:
                f = _without_seed_fix(f, seed, _in_parent_words(awaiting), parent[0])
            elif parent and f.code in READ_ONLY_RULES:
                # No fix is offered; the rule's own review note still matters to whoever moves
                # the read (a -1 default: ``LOCAL_RANK != -1`` then asks "distributed?", which
                # an ordinal never answers: yolov5's classify/train.py, held-out 38).
                message, _, note = f.message.partition(" (fix needs review:")
                where = _in_parent_words(awaiting).format(line=line_ref(parent[0] + 1))
                manual = PARENT_MANUAL
                sentinel = SENTINEL_NOTE.search(note)
                if sentinel is not None:
                    manual += (
                        f"; and mind its default {sentinel.group(1)}: it marks a run without "
                        "torchrun, and a test against it asks whether the script runs "
                        "distributed, which an ordinal never answers: test "
                        "`xr.world_size() > 1` there"
                    )
                f = replace(f, message=f"{message} (no fix here: {where})", fix=None, manual=manual)
            elif parent and xla_launched and not _touches_runtime_already(model, f):
                # The script starts its replicas with torch_xla's launcher already: accepted,
                # this fix would make that launch fail (held-out 59's GPT2-Chinese picker), so
                # none is offered; the advice says where the line belongs.
                where = _in_parent_words(awaiting).format(line=line_ref(parent[0] + 1))
                f = replace(f, message=f"{f.message} (no fix here: {where})", fix=None)
                f = replace(f, manual=PARENT_MANUAL)
            elif parent:
                reason = _parent_review(awaiting).format(line=line_ref(parent[0] + 1))
                f = replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
        elif (
            f.fix is not None
            and not f.fix.safe
            and f.code != LAUNCHER_RULE
            and f.fix.review_reason
            and in_parent(f.span.start.line + 1)
        ):
            # Already for review (XLA203 under torchrun): accepted with XLA204's launcher,
            # the runtime call lands in the parent; the reason must say that too.
            parent = [ln for ln in _runtime_sites(f.fix) if in_parent(ln + 1)]
            if parent and (seed := _seed_written(f.fix)) is not None:
                f = _without_seed_fix(f, seed, _in_parent_words(awaiting), parent[0])
            elif parent:
                old = review_reason_as_written(f.fix)
                reason = (
                    f"{old}; also {_parent_review(awaiting).format(line=line_ref(parent[0] + 1))}"
                )
                f = replace(
                    f,
                    message=message_as_written(f).replace(old, reason),
                    fix=replace(f.fix, review_reason=reason),
                )
        out.append(f)
    return out
