"""RunSummary: what a run did, grouped by the source line that caused it."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .events import Compile, ExceptionRaised, Execute, Problem, Step


@dataclass
class LineStats:
    file: str
    line: int
    function: str | None = None
    compiles: int = 0  # graph lookups at this line: uncached + cached
    uncached_compiles: int = 0  # real XLA compilations (a graph not seen before)
    compile_s: float = 0.0
    executes: int = 0
    execute_s: float = 0.0
    graphs: int = 0  # distinct graph hashes compiled here
    causes: dict[str, int] = field(default_factory=dict)
    compile_steps: list[int] = field(default_factory=list)  # steps with an uncached compile


@dataclass
class RunSummary:
    script: str
    status: str  # ok | failed | signal | cancelled | timeout | step-limit | refused
    returncode: int | None = None
    signal: str | None = None
    device: str | None = None
    device_reason: str = ""
    duration_s: float = 0.0
    steps: int = 0
    step_limit: int | None = None
    uncached_compiles: int = 0
    cached_compiles: int = 0
    compile_s: float = 0.0
    execute_s: float = 0.0
    transfer_from_device_s: float = 0.0
    fallbacks: dict[str, int] = field(default_factory=dict)
    lines: list[LineStats] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    exception: ExceptionRaised | None = None
    output_lines_dropped: int = 0
    leftover_killed: int = 0
    message: str = ""  # why a run was refused, in plain words
    # Graphs were dumped to explain recompilations up to this step (None: all steps, or off).
    explain_window_step: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def line(self, file: str, line: int) -> LineStats | None:
        return next((s for s in self.lines if s.file == file and s.line == line), None)


def group_lines(events: Iterable[Compile | Execute]) -> list[LineStats]:
    stats: dict[tuple[str, int], LineStats] = {}
    hashes: dict[tuple[str, int], set[str]] = {}
    for ev in events:
        if ev.file is None or ev.line is None:
            continue
        key = (ev.file, ev.line)
        s = stats.setdefault(key, LineStats(ev.file, ev.line, ev.function))
        causes = Counter(s.causes)
        if isinstance(ev, Compile):
            s.uncached_compiles += 1
            s.compile_s += ev.seconds or 0.0
            hashes.setdefault(key, set()).add(ev.graph_hash)
            if ev.step not in s.compile_steps:
                s.compile_steps.append(ev.step)
        else:
            s.executes += 1
            s.execute_s += ev.seconds or 0.0
            causes[ev.cause] += 1
        s.causes = dict(causes)
    for key, s in stats.items():
        s.graphs = len(hashes.get(key, ()))
        # Every execution first looks its graph up: a hit is a cached compile.
        s.compiles = max(s.executes, s.uncached_compiles)
    return sorted(stats.values(), key=lambda s: (-s.compile_s - s.execute_s, s.file, s.line))


def add_step_totals(summary: RunSummary, steps: Iterable[Step]) -> None:
    fallbacks: Counter[str] = Counter(summary.fallbacks)
    for st in steps:
        summary.uncached_compiles += st.uncached_compiles
        summary.cached_compiles += st.cached_compiles
        summary.compile_s += st.compile_s
        summary.execute_s += st.execute_s
        summary.transfer_from_device_s += st.transfer_from_device_s
        fallbacks.update(st.fallbacks)
    summary.fallbacks = dict(fallbacks)
