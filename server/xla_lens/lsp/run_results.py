"""What the last (or current) run of each document found, per source line, and where those
lines are in the text the editor has now.

Results are anchored to the text the run executed (the file on disk when it started). Every
view maps them onto the text it renders with a line diff: lines that are unchanged keep their
results (shifted past insertions and deletions), a line that was edited loses them. Mapping
from the anchor each time, instead of patching line numbers on every didChange, means no
drift, and an edit that is undone brings its hint back.
"""

from __future__ import annotations

import atexit
import difflib
import os
import signal
from dataclasses import dataclass, field

from ..runner import LineStats, RunHandle, RunSummary
from ..runner.events import Compile, Execute, Problem
from ..runner.summary import group_lines
from .positions import split_lines


def content_lines(text: str) -> list[str]:
    text = text[1:] if text.startswith("\ufeff") else text
    return [line.rstrip("\r\n") for line in split_lines(text)]


def line_map(old: list[str], new: list[str]) -> dict[int, int]:
    """0-based line in ``old`` -> the same, unchanged line in ``new``."""
    if old == new:
        return {i: i for i in range(len(old))}
    # autojunk would treat frequent lines (blank, "    pass") as noise and unmatch them.
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    out: dict[int, int] = {}
    for a, b, size in matcher.get_matching_blocks():
        for k in range(size):
            out[a + k] = b + k
    return out


# Problems about the whole run rather than a line: shown on the file's first line.
WHOLE_RUN_KINDS = ("no-xla", "hang")


@dataclass
class LineResult:
    stats: LineStats | None = None
    problems: list[Problem] = field(default_factory=list)  # caused here
    # Explained recompilations whose compile this line triggered, though caused elsewhere.
    triggered: list[Problem] = field(default_factory=list)


@dataclass
class DocumentRun:
    uri: str
    script: str  # realpath of the file that ran
    anchor: list[str]  # its lines when the run started
    handle: RunHandle | None = None
    cancel_requested: bool = False
    device: str | None = None
    device_reason: str | None = None
    pid: int | None = None
    steps: int = 0
    compiles: int = 0
    graph_events: list[Compile | Execute] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    summary: RunSummary | None = None
    refusal: str | None = None
    generation: int = 0  # bumped whenever the per-line results change
    _cache: tuple[int, tuple[str, ...], dict[int, LineResult]] | None = None

    @property
    def running(self) -> bool:
        return self.summary is None and self.refusal is None

    def changed(self) -> None:
        self.generation += 1

    def _own(self, file: str | None) -> bool:
        return file is not None and os.path.realpath(file) == self.script

    def by_anchor_line(self) -> dict[int, LineResult]:
        # While streaming there is no summary yet: group what has arrived the same way.
        stats = self.summary.lines if self.summary else group_lines(self.graph_events)
        problems = self.summary.problems if self.summary else self.problems
        out: dict[int, LineResult] = {}
        for s in stats:
            if self._own(s.file) and s.line >= 1:
                out.setdefault(s.line - 1, LineResult()).stats = s
        for p in problems:
            if self._own(p.file) and p.line is not None and p.line >= 1:
                out.setdefault(p.line - 1, LineResult()).problems.append(p)
            elif p.kind in WHOLE_RUN_KINDS and (p.file is None or self._own(p.file)):
                out.setdefault(0, LineResult()).problems.append(p)
            # Fields of an explained recompilation; absent from runners that do not explain.
            trigger_file = getattr(p, "trigger_file", None) or p.file
            trigger_line = getattr(p, "trigger_line", None)
            if (
                self._own(trigger_file)
                and isinstance(trigger_line, int)
                and trigger_line >= 1
                and (trigger_line != p.line or not self._own(p.file))
            ):
                out.setdefault(trigger_line - 1, LineResult()).triggered.append(p)
        return out

    def mapped(self, text: str) -> dict[int, LineResult]:
        """Results keyed by 0-based line of ``text``; lines edited since the run are gone."""
        lines = tuple(content_lines(text))
        if self._cache is not None and self._cache[:2] == (self.generation, lines):
            return self._cache[2]
        where = line_map(self.anchor, list(lines))
        out = {where[a]: r for a, r in self.by_anchor_line().items() if a in where}
        self._cache = (self.generation, lines, out)
        return out


class RunStore:
    """The newest run of each document; at most one of them running."""

    def __init__(self) -> None:
        self.runs: dict[str, DocumentRun] = {}
        # The script runs in its own session, so it would outlive a server that exits
        # (editor closed mid-run): kill what is still running on the way out.
        atexit.register(self.kill_all)

    def get(self, uri: str) -> DocumentRun | None:
        return self.runs.get(uri)

    def active(self, uri: str) -> DocumentRun | None:
        run = self.runs.get(uri)
        return run if run is not None and run.running else None

    def begin(self, uri: str, script: str, text: str) -> DocumentRun:
        """Replaces (and so clears) the document's previous results."""
        run = DocumentRun(uri=uri, script=os.path.realpath(script), anchor=content_lines(text))
        self.runs[uri] = run
        return run

    def kill_all(self) -> None:
        for run in self.runs.values():
            if run.running and run.pid:
                try:
                    os.killpg(run.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
