"""XLA403: CUDA-only calls and settings that mean nothing (or fail) on an XLA device."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from pathlib import Path

from ..semantic import xla_api
from ..semantic.cuda_branches import cuda_only_branch, requires_cuda, short_circuited
from ..semantic.device_intent import hand_written_xla
from ..semantic.injected_xla import seeds_xla_in
from ..semantic.line_refs import line_ref
from ..semantic.loop_syncs import written_for_xla
from ..semantic.model import Emitter, ScriptModel
from ..semantic.workspace import FunctionFacts
from .base import (
    Category,
    Finding,
    Fix,
    RemoveStatement,
    Rule,
    RuleContext,
    Severity,
    message_as_written,
)
from .parts.cuda_asserts import cuda_availability_asserts, cuda_uses_after
from .parts.cuda_env_reads import cuda_env_reads
from .parts.cuda_gates import AVAILABILITY, stop_gates
from .parts.cuda_memory_queries import (
    MEMORY_ADVICE,
    MEMORY_QUERIES,
    memory_message,
    skipped_memory_figure,
)
from .parts.current_device import current_device_kept
from .parts.data_parallel_tests import data_parallel_test
from .parts.guarded_seeds import seed_fix
from .parts.library_autocast import display_path
from .parts.pin_memory import pin_memory_findings
from .parts.pin_memory_options import pin_option_findings
from .parts.timer_sync import SYNCHRONIZE, times_device_work, wait_fix

CODE = "XLA403"
# Calls with no effect worth keeping on XLA: the statement can go.
REMOVABLE = {
    # Without a sync nothing is launched yet, so wait_device_ops() alone would wait for nothing.
    "torch.cuda.synchronize": "to wait for the XLA device (e.g. for timing) run the pending "
    "graph with torch_xla.sync() then xm.wait_device_ops()",
    "torch.cuda.empty_cache": "XLA manages device memory itself",
    "torch.cuda.reset_peak_memory_stats": "XLA keeps no CUDA memory statistics",
    "torch.cuda.reset_max_memory_allocated": "XLA keeps no CUDA memory statistics",
    "torch.cuda.reset_accumulated_memory_stats": "XLA keeps no CUDA memory statistics",
    "torch.cuda.ipc_collect": "XLA manages device memory itself",
    "torch.cuda.set_device": "each XLA process gets its device from the launcher",
    # torch.accelerator knows no XLA: on an XLA host these raise ("Found no NVIDIA driver").
    "torch.accelerator.set_device_index": "each XLA process gets its device from the launcher",
    "torch.accelerator.set_device_idx": "each XLA process gets its device from the launcher",
    "torch.accelerator.synchronize": "to wait for the XLA device (e.g. for timing) run the "
    "pending graph with torch_xla.sync() then xm.wait_device_ops()",
}
# A synchronize right before a clock read (parts/timer_sync.py) becomes the XLA wait instead.
TIMER_WAIT = (
    "waits for the device before a timer read: XLA runs the work lazily, so without a wait "
    "the timing would cover graph tracing only; {sync} runs the pending graph and {wait} "
    "waits for it"
)
# The removable calls that change nothing a CUDA run can observe either (they only hand cached
# memory back to the driver): a guarded block of only these can go. A guarded synchronize,
# set_device or stats reset does matter on the CUDA host (event timing needs the synchronize),
# and the block never runs on XLA: it is left alone.
FREES_CACHED_MEMORY = {"torch.cuda.empty_cache", "torch.cuda.ipc_collect"}
SEEDS = {"torch.cuda.manual_seed", "torch.cuda.manual_seed_all"}
COUNTS = {"torch.cuda.device_count", "torch.accelerator.device_count"}
DEVICE_QUERIES = {
    "torch.cuda.device_count",
    "torch.accelerator.device_count",
    "torch.cuda.get_device_name",
    "torch.cuda.get_device_properties",
}
BACKEND_PREFIXES = ("torch.backends.cudnn.", "torch.backends.cuda.")


def _guard_of(model: ScriptModel, node: ast.AST) -> ast.If | None:
    """The ``if`` around ``node`` whose test is False on an XLA host
    (``semantic/cuda_branches``): its body never runs there."""
    return cuda_only_branch(model, node)


def _guarded(model: ScriptModel, node: ast.AST) -> bool:
    """Inside ``if torch.cuda.is_available():`` — never runs on XLA, so harmless."""
    return _guard_of(model, node) is not None


def _dead_cuda_block(model: ScriptModel, guard: ast.If) -> list[str] | None:
    """The names of the calls when ``guard`` is ``if torch.cuda.is_available():`` with only
    calls that free cached CUDA memory in it (``torch.cuda.empty_cache()``) and no else: the
    whole block can go, on XLA and CUDA hosts alike. None for anything else (other statements,
    another CUDA call the CUDA run may need, an else, an elif, a test that calls something
    besides the availability check)."""
    if guard.orelse or not _pure_cuda_test(model, guard.test):
        return None
    parent = model.parent(guard)
    if isinstance(parent, ast.If) and guard in parent.orelse:
        return None  # an elif: removing it would need the chain rewritten
    names = []
    for stmt in guard.body:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return None
        q = model.call_name(stmt.value)
        if q not in FREES_CACHED_MEMORY:
            return None
        names.append(q)
    return names


def _pure_cuda_test(model: ScriptModel, test: ast.expr) -> bool:
    """``torch.cuda.is_available()``, alone or ``and``-ed with conditions that call nothing."""
    calls = [n for n in ast.walk(test) if isinstance(n, ast.Call)]
    return (
        bool(calls)
        and all(model.call_name(c) in AVAILABILITY and not c.args and not c.keywords for c in calls)
        and requires_cuda(model, test)
    )


def _dead_block_finding(model: ScriptModel, guard: ast.If, names: list[str]) -> Finding:
    shown = ", ".join(f"{q}()" for q in dict.fromkeys(names))
    test = model.segment(guard.test)
    return _finding(
        model,
        guard,
        f"`if {test}:` only frees cached CUDA memory ({shown}): on an XLA host the test is "
        f"False and the block silently does nothing; {REMOVABLE[names[0]]}",
        fix=Fix(f"Remove the CUDA-only `if {test}:` block", (RemoveStatement(model.span(guard)),)),
    )


def _finding(
    model: ScriptModel,
    node: ast.AST,
    message: str,
    fix: Fix | None = None,
    manual: str | None = None,
) -> Finding:
    return Finding(CODE, message, model.span(node), Severity.WARNING, fix=fix, manual=manual)


def _calls(model: ScriptModel, target: str) -> Iterator[Finding]:
    dead_blocks: set[int] = set()
    memory_guards: set[int] = set()
    for call in model.calls:
        q = model.call_name(call)
        if q is None or short_circuited(model, call):
            continue
        guard = _guard_of(model, call)
        if guard is not None:
            if q in FREES_CACHED_MEMORY and id(guard) not in dead_blocks:
                names = _dead_cuda_block(model, guard)
                if names is not None:
                    dead_blocks.add(id(guard))
                    yield _dead_block_finding(model, guard, names)
            elif q in SYNCHRONIZE and _timed_under_guard(model, call):
                yield _skipped_wait(model, guard, q, target)
            elif q in SEEDS:
                # The guard is False on an XLA host: the XLA device then stays unseeded.
                yield from _guarded_seed(model, call, q, target)
            elif q in MEMORY_QUERIES and id(guard) not in memory_guards:
                memory_guards.add(id(guard))
                yield skipped_memory_figure(model, guard, q, CODE)
            elif q in COUNTS:
                ws = xla_api.world_size(Emitter(model), target)  # type: ignore[arg-type]
                yield _finding(
                    model,
                    call,
                    f"{q}() runs only when `{model.segment(guard.test)[:50]}` is true: on an "
                    "XLA host this branch is skipped, so what it sets from the device count (replica count, per-device "
                    "batch size) keeps its non-CUDA value",
                    manual=f"Count XLA replicas with `{ws}` outside the "
                    f"`{model.segment(guard.test)[:50]}` check.",
                )
            continue
        stmt = model.enclosing_statement(call)
        if q in REMOVABLE:
            message = f"{q}() is CUDA-only: {REMOVABLE[q]}"
            statement = isinstance(stmt, ast.Expr) and stmt.value is call
            if statement and q in SYNCHRONIZE and times_device_work(model, stmt):
                assert isinstance(stmt, ast.Expr)
                fix = wait_fix(model, stmt, target)
                sync, wait = fix.title.split(": ", 1)[1].split("; ")
                message = f"{q}() {TIMER_WAIT.format(sync=sync, wait=wait)}"
                yield _finding(model, call, message, fix=fix)
            elif statement:
                fix = Fix(f"Remove {q}()", (RemoveStatement(model.span(stmt)),))
                if q == "torch.cuda.set_device" and (
                    held := current_device_kept(model, target, call)
                ):
                    fix = Fix(fix.title, fix.ops, safe=False, review_reason=held)
                yield _finding(model, call, message, fix=fix)
            else:
                yield _finding(model, call, message, manual="Remove the CUDA-only call by hand.")
        elif q in SEEDS:
            seed = call.args[0] if len(call.args) == 1 and not call.keywords else None
            if seed is None or isinstance(seed, ast.Starred):
                continue
            seeded = seeds_xla_in(model, model.enclosing_function(call))
            if seeded is not None:
                # ``torch.cuda.manual_seed(seed)`` beside ``xm.set_rng_state(seed)`` (held-out
                # 82's TPU-Star): the XLA device is seeded already; the CUDA seed does nothing.
                message = (
                    f"{q}() seeds CUDA only, which an XLA host does not have; the XLA device is "
                    f"seeded on line {line_ref(seeded.lineno)} already"
                )
                if isinstance(stmt, ast.Expr) and stmt.value is call:
                    fix = Fix(f"Remove {q}()", (RemoveStatement(model.span(stmt)),))
                    yield _finding(model, call, message, fix=fix)
                else:
                    yield _finding(model, call, message, manual="Remove the CUDA seed by hand.")
                continue
            e = Emitter(model)
            code = xla_api.manual_seed(e, target, model.segment(seed))
            fix, note = seed_fix(model, call, code, e)
            yield _finding(
                model,
                call,
                f"{q}() seeds CUDA only: the XLA device's random numbers stay unseeded; use "
                f"{code}{note}",
                fix=fix,
            )
        elif q in MEMORY_QUERIES:
            yield _finding(model, call, memory_message(q), manual=MEMORY_ADVICE)
        elif q in DEVICE_QUERIES and (wrapper := data_parallel_test(model, call)) is not None:
            yield Finding(
                CODE,
                f"{q}() decides here whether nn.DataParallel is in use (line "
                f"{wrapper}): on an XLA host it counts no CUDA device, so the single-model "
                "branch runs, as it must once DataParallel is removed (XLA110)",
                model.span(call),
                Severity.INFORMATION,
                manual="Keep this test in step with the one that wraps the model: replacing only "
                "one of them with the XLA world size would read `.module` of a model that is "
                "not wrapped (or wrap it again).",
            )
        elif q in DEVICE_QUERIES:
            ws = xla_api.world_size(Emitter(model), target)
            yield _finding(
                model,
                call,
                f"{q}() counts/describes CUDA devices, not XLA devices",
                manual=f"For the number of XLA processes use `{ws}`; for the device kind use "
                "`torch_xla.runtime.device_type()` (modern) / `xm.xla_device_hw(device)`.",
            )


def _timed_under_guard(model: ScriptModel, call: ast.Call) -> bool:
    stmt = model.enclosing_statement(call)
    return isinstance(stmt, ast.Expr) and stmt.value is call and times_device_work(model, stmt)


def _skipped_wait(model: ScriptModel, guard: ast.If, q: str, target: str) -> Finding:
    """Reported at the guard's test: the engine leaves the CUDA-only body alone (the CUDA run
    needs its synchronize), but the XLA run's timing silently loses the wait."""
    e = Emitter(model)
    wait = f"{xla_api.sync(e, target)}; {e.xm}.wait_device_ops()"  # type: ignore[arg-type]
    test = model.segment(guard.test)[:50]
    return _finding(
        model,
        guard.test,
        f"{q}() runs only when `{test}` is true: on an XLA host the wait is skipped, so the "
        "timer read after it covers graph tracing only, not the device work",
        manual=f"Wait on the XLA host too: add `else: {wait}` to the `if {test}:` check.",
    )


def _guarded_seed(model: ScriptModel, call: ast.Call, q: str, target: str) -> Iterator[Finding]:
    seed = call.args[0] if len(call.args) == 1 and not call.keywords else None
    if seed is None or isinstance(seed, ast.Starred):
        return
    code = xla_api.manual_seed(Emitter(model), target, model.segment(seed))  # type: ignore[arg-type]
    yield _finding(
        model,
        call,
        f"{q}() runs only when CUDA is available: on an XLA host it is skipped and the XLA "
        f"device's random numbers stay unseeded; seed it unconditionally with {code}",
        manual=f"Call {code} outside the torch.cuda.is_available() check (after the XLA "
        "device is chosen).",
    )


def _backend_settings(model: ScriptModel) -> Iterator[Finding]:
    if hand_written_xla(model) or written_for_xla(model):
        # A script written for XLA that keeps its TF32/cuDNN flags (text2img-DiT's
        # tpu_train.py, held-out 84): inert there, and deleting them orphans the comment
        # that explains them.
        return
    for node in model.nodes_of(ast.Assign):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        q = model.qualname(node.targets[0])
        if q is None or not q.startswith(BACKEND_PREFIXES) or _guarded(model, node):
            continue
        yield _finding(
            model,
            node.targets[0],
            f"{q} configures cuDNN/CUDA kernels: it has no effect on an XLA device",
            fix=Fix(f"Remove the {q} setting", (RemoveStatement(model.span(node)),)),
        )


# A workspace helper is reported at its call when it sets up the CUDA device or an NCCL
# process group: that is where the script's device setup happens. Its CUDA seeds are named
# too; other CUDA-only calls in it (empty_cache, memory queries) are reported in its file.
HELPER_SETUP = {"torch.cuda.set_device"}
HELPER_EVIDENCE = HELPER_SETUP | SEEDS
_SHOWN = 3  # calls named in a helper finding; the rest are counted


def _helper_calls(model: ScriptModel) -> Iterator[Finding]:
    """``compute_init()`` imported from the workspace that calls ``torch.cuda.set_device`` or
    inits NCCL in its own file: the call here is where the script sets up CUDA. The change
    belongs in the other file, so the finding explains and points there (no fix)."""
    facts_of: dict[str, FunctionFacts | None] = {}
    for call in model.calls:
        func = call.func
        if not isinstance(func, ast.Name) or func.id in model.functions:
            continue
        if func.id not in facts_of:  # one look at the disk per imported name
            facts_of[func.id] = model.steps.external(call)
        facts = facts_of[func.id]
        if facts is None:
            continue
        if not facts.nccl_line and not any(q in HELPER_SETUP for q, _ in facts.cuda_calls):
            continue
        uses = [(f"{q}()", line) for q, line in facts.cuda_calls if q in HELPER_EVIDENCE]
        if facts.nccl_line:
            uses.append(('init_process_group(backend="nccl")', facts.nccl_line))
        uses.sort(key=lambda u: u[1])
        where = display_path(model.path, Path(facts.module))
        shown = ", ".join(f"{q} (line {line})" for q, line in uses[:_SHOWN])
        more = f" and {len(uses) - _SHOWN} more" if len(uses) > _SHOWN else ""
        todo = ["drop or replace its torch.cuda calls (seed with torch_xla.manual_seed)"]
        if facts.nccl_line:
            todo.append('init the process group with the "xla" backend')
        yield _finding(
            model,
            call,
            f"{func.id}() is defined in {where} and sets up CUDA there: {shown}{more}; on an XLA "
            "host these calls fail, or are skipped and leave the XLA device and process group "
            "unset",
            manual=f"Change {func.id}() in {where} for XLA: {'; '.join(todo)}.",
        )


def _gates_kept_for_cuda_uses(model: ScriptModel) -> Iterator[Finding]:
    """The stop gates (``if not torch.cuda.is_available(): sys.exit()``), their removal for
    review while the script still needs CUDA after the gate (``cuda_uses_after``): without it
    ``mp.spawn(nprocs=torch.cuda.device_count())`` would start no process and exit 0."""
    gates = {model.span(n): n for n in model.nodes_of(ast.If)}
    for f in stop_gates(model, CODE, lambda node: _guarded(model, node)):
        ops = f.fix.ops if f.fix is not None and f.fix.safe else ()
        ops = ops if isinstance(ops, tuple) else ()
        gate = (
            gates.get(ops[0].span)
            if len(ops) == 1 and isinstance(ops[0], RemoveStatement)
            else None
        )
        reason = cuda_uses_after(model, gate, lambda n: _guarded(model, n)) if gate else ""
        if not reason:
            yield f
            continue
        fix = dataclasses.replace(f.fix, safe=False, review_reason=reason)
        yield dataclasses.replace(
            f, message=f"{message_as_written(f)} (fix needs review: {reason})", fix=fix
        )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _calls(model, ctx.target)
    yield from cuda_availability_asserts(model, CODE, lambda node: _guarded(model, node))
    yield from _gates_kept_for_cuda_uses(model)
    yield from _helper_calls(model)
    yield from _backend_settings(model)
    yield from pin_memory_findings(model, CODE)
    yield from pin_option_findings(model, CODE)
    yield from cuda_env_reads(model, CODE)


HOVER = """\
**XLA403 · CUDA-only call**

`torch.cuda.*` utilities and `torch.backends.cudnn.*` settings act on CUDA only; on an XLA
device they do nothing or fail (no CUDA driver on TPU/Trainium hosts).

| CUDA | XLA |
|---|---|
| `torch.cuda.synchronize(); t1 = time.time()` | `torch_xla.sync()` + `xm.wait_device_ops()` |
| `torch.cuda.synchronize()` (no timer read after it) | remove |
| `torch.cuda.empty_cache()`, `reset_peak_memory_stats()`, `set_device()` | remove |
| `torch.accelerator.set_device_index()`, `synchronize()` (raise on XLA) | remove |
| `if torch.cuda.is_available(): torch.cuda.empty_cache()` | remove the block (False on XLA) |
| `assert torch.cuda.is_available()` (fails on an XLA host) | remove |
| `if not torch.cuda.is_available(): sys.exit()` (a requirement gate) | remove |
| `torch.backends.cudnn.benchmark = ...` | remove |
| `DataLoader(pin_memory=True)` | drop `pin_memory` |
| `torch.cuda.manual_seed(s)` | modern `torch_xla.manual_seed(s)`, legacy `xm.set_rng_state(s)` |
| `torch.cuda.max_memory_allocated()` | `xm.get_memory_info(device)` |
| `torch.cuda.device_count()`, `torch.accelerator.device_count()` | modern `xr.world_size()`, legacy `xm.xrt_world_size()` |
"""

RULE = Rule(
    code=CODE,
    name="cuda-only-call",
    category=Category.PERFORMANCE,
    summary="CUDA-only calls (torch.cuda.synchronize/empty_cache/manual_seed, cudnn flags, pin_memory) → removed or the XLA equivalent",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        **{q: HOVER for q in (*REMOVABLE, *SEEDS, *MEMORY_QUERIES, *DEVICE_QUERIES)},
        "torch.backends.cudnn.benchmark": HOVER,
        "torch.backends.cudnn.deterministic": HOVER,
        "torch.utils.data.DataLoader(pin_memory=)": HOVER,
    },
)
