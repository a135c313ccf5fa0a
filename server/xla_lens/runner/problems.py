"""Names the problems users care about, from what a run recorded.

Thresholds are deliberately conservative: the first two steps of a training loop normally
compile (step 1 builds the graph, step 2 the one with optimizer state), so a line is only
"recompiling" when it builds new graphs in at least ``RECOMPILE_STEPS`` different steps, unless
the graphs themselves say why (``graph_diff``): a shape or a baked-in constant that changed at a
line of the user's code is reported at that line even for a single recompilation.
"""

from __future__ import annotations

from collections.abc import Sequence

from .debug_parse import FallbackSite
from .events import Compile, ExceptionRaised, Execute, Problem
from .frames import UserCode
from .graph_diff import Explanation, summarize
from .summary import LineStats

RECOMPILE_STEPS = 3
HOST_READ_STEPS = 2
# Step 1 always compiles more than it executes; "compile-bound" needs a loop to judge.
COMPILE_BOUND_MIN_STEPS = 2
HOST_READ_CAUSE = "access tensor value"
# .item()/float()/print(t) show up as this "fallback"; it is the host read, reported as such.
HOST_READ_OP = "aten::_local_scalar_dense"


def find_problems(
    lines: Sequence[LineStats],
    graph_events: Sequence[Compile | Execute],
    fallbacks: dict[str, int],
    fallback_sites: Sequence[FallbackSite],
    user: UserCode,
    exception: ExceptionRaised | None,
    compile_s: float,
    execute_s: float,
    stuck_lines: Sequence[str] = (),
    stopped_early: bool = False,
    explanations: Sequence[Explanation] = (),
) -> list[Problem]:
    out: list[Problem] = []
    host_lines = _host_reads(graph_events, out)
    out.extend(_recompiles(lines, graph_events, explanations))
    out.extend(_fallbacks(fallbacks, fallback_sites, user, host_lines))
    # A run cancelled (or timed out) early has only compiled yet: that is no finding.
    if not stopped_early and _steps(graph_events) >= COMPILE_BOUND_MIN_STEPS:
        out.extend(_compile_bound(lines, compile_s, execute_s))
    if exception is not None:
        out.append(
            Problem(
                "crash",
                exception.file,
                exception.line,
                f"{exception.exc_type}: {exception.message}".rstrip(": "),
            )
        )
    if stuck_lines:
        out.append(
            Problem(
                "hang",
                None,
                None,
                "an XLA collective waited for replicas that never arrived: "
                + stuck_lines[0].strip()[:300],
            )
        )
    return out


def _steps(events: Sequence[Compile | Execute]) -> int:
    return max((e.step for e in events), default=0)


def _host_reads(events: Sequence[Compile | Execute], out: list[Problem]) -> set[tuple[str, int]]:
    steps: dict[tuple[str, int], set[int]] = {}
    for ev in events:
        if isinstance(ev, Execute) and HOST_READ_CAUSE in ev.cause and ev.file and ev.line:
            steps.setdefault((ev.file, ev.line), set()).add(ev.step)
    for (file, line), seen in sorted(steps.items()):
        if len(seen) >= HOST_READ_STEPS:
            out.append(
                Problem(
                    "host-read",
                    file,
                    line,
                    f"reads a tensor value on the host in {len(seen)} steps: each read "
                    "compiles and runs the pending graph before torch_xla.sync. Move it into "
                    "xm.add_step_closure(...) or read less often.",
                )
            )
    return set(steps)


def _recompiles(
    lines: Sequence[LineStats],
    events: Sequence[Compile | Execute],
    explanations: Sequence[Explanation],
) -> list[Problem]:
    out = []
    explained = summarize(explanations)
    by_cause: dict[tuple[object, ...], Problem] = {}
    for s in lines:
        mine = [
            e for e in events if isinstance(e, Compile) and (e.file, e.line) == (s.file, s.line)
        ]
        host = all(HOST_READ_CAUSE in e.cause for e in mine)
        found = explained.get((s.file, s.line))
        # A shape or a constant that changes is a real recompilation even if it happens once
        # (the last, smaller batch); a changed op sequence is judged like an unexplained one,
        # since the first graphs of a loop differ anyway.
        if found and (found[0].change.kind != "branch" or len(s.compile_steps) >= RECOMPILE_STEPS):
            problem = _explained(s, found[0], host)
            key = (problem.file, problem.line, problem.change_kind)
            if key in by_cause:  # one cause, several triggers (a host read, then the sync)
                by_cause[key].message += f"; also line {s.line}"
            else:
                by_cause[key] = problem
                out.append(problem)
            continue
        if len(s.compile_steps) < RECOMPILE_STEPS or s.graphs < RECOMPILE_STEPS:
            continue
        # The first graph often differs (optimizer state appears at step 2): judge the rest.
        later = mine[1:] or mine
        shapes_only = len({(e.inputs, e.outputs) for e in later}) == 1
        if shapes_only:
            cause = (
                "same number of graph inputs/outputs each time, so most likely a tensor shape "
                "changes between steps (variable batch size: drop_last=True; padding to the "
                "longest; data-dependent ops like nonzero/masked_select)"
            )
        else:
            cause = "the traced graph itself changes (Python control flow on tensor values?)"
        trigger = "a host read here" if host else "torch_xla.sync here"
        out.append(
            Problem(
                "recompilation",
                s.file,
                s.line,
                f"compiled {s.graphs} different graphs in {len(s.compile_steps)} steps "
                f"({s.compile_s:.2f}s compiling), triggered by {trigger}; likely cause: {cause}",
            )
        )
    return out


def _explained(s: LineStats, ex: Explanation, host: bool) -> Problem:
    change, cause = ex.change, ex.change.cause
    assert cause is not None and cause.file is not None  # explain() keeps located causes only
    trigger = "host read" if host else "sync"
    return Problem(
        "recompilation",
        cause.file,
        cause.line,
        f"recompiles: {change.headline}; the {trigger} at line {s.line} compiled {s.graphs} "
        f"graphs ({s.compile_s:.2f}s)",
        cause_file=cause.file,
        cause_line=cause.line,
        change_kind=change.kind,
        changed=change.changed,
        hint=change.hint,
        doc_url=change.doc_url,
        trigger_file=s.file,
        trigger_line=s.line,
    )


def _fallbacks(
    fallbacks: dict[str, int],
    sites: Sequence[FallbackSite],
    user: UserCode,
    host_lines: set[tuple[str, int]],
) -> list[Problem]:
    ops = sorted(op for op in fallbacks if op != HOST_READ_OP)
    places = []
    for site in sites:
        frame = user.pick(site.frames)
        if frame is not None and (frame.file, frame.line) not in host_lines:
            places.append(frame)
    out = []
    for op in ops:
        # torch_xla's summary locates fallbacks without naming the op: a single op with a
        # single place is unambiguous, otherwise say where fallbacks happened.
        where = places[0] if len(ops) == 1 and len(places) == 1 else None
        also = ""
        if where is None and places:
            also = " (fallbacks at " + ", ".join(f"line {p.line}" for p in places[:5]) + ")"
        out.append(
            Problem(
                "cpu-fallback",
                where.file if where else None,
                where.line if where else None,
                f"{op} is not lowered to XLA: it ran on the CPU {fallbacks[op]} times, copying "
                f"its tensors to the host and back{also}",
            )
        )
    return out


def _compile_bound(lines: Sequence[LineStats], compile_s: float, execute_s: float) -> list[Problem]:
    if compile_s < 0.5 or compile_s <= execute_s:
        return []
    top = max(lines, key=lambda s: s.compile_s, default=None)
    return [
        Problem(
            "compile-bound",
            top.file if top else None,
            top.line if top else None,
            f"{compile_s:.2f}s compiling vs {execute_s:.2f}s executing: the run is dominated by "
            "XLA compilation (recompiles, or too few steps to amortise the first compile)",
        )
    ]
