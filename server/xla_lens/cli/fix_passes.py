"""``fix`` over several files: passes until no file changes, so one run is a fixed point.

Some fixes are judged from the other files of the project as they are on disk: XLA102/XLA103 in
a trainer module whose device is handed in by a caller in ``main.py`` are safe only once that
caller picks the XLA device (``rules/parts/device_from_caller.py``). When the same run converts
``main.py`` after the trainer module, a single pass left the trainer's fix for review, and a
second identical ``fix`` applied it (held-out re-measure n7, MAE ``engine_pretrain.py``). So
after a pass that wrote any file, the files are fixed again (their evidence may have changed),
until a pass writes nothing, at most ``MAX_PASSES`` times. With ``--diff`` nothing is written:
the later passes read the earlier passes' texts in place of the files (``engine.stand_ins``), so
the preview shows what ``fix`` would write, passes and all.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..engine import FixOutcome
from ..engine.stand_ins import stand_ins
from .files import FileProblem, SourceFile, read_source
from .writeback import write_back

# A caller converted in pass 1 settles its callee in pass 2; deeper chains are rare.
MAX_PASSES = 4


@dataclass
class FileRun:
    """One file across the passes: the text it had before the run, the latest outcome, every
    fix applied to it (all passes) and where it was written."""

    path: Path
    original: str
    outcome: FixOutcome
    applied: list[str] = field(default_factory=list)
    written: Path | None = None
    # The text after the run (what --diff shows; what is on disk otherwise).
    final: str = ""

    @property
    def changed(self) -> bool:
        return self.final != self.original


@dataclass
class PassesResult:
    runs: list[FileRun] = field(default_factory=list)
    problems: int = 0
    passes: int = 0


def fix_files(
    paths: list[Path],
    fix: Callable[[Path, SourceFile], FixOutcome],
    write: bool,
    report: Callable[[str], None],
) -> PassesResult:
    """Fix every file of ``paths`` (``fix`` runs the engine on one file; problems go to
    ``report``), writing the results when ``write``, until a pass writes nothing."""
    result = PassesResult()
    runs: dict[Path, FileRun] = {}
    failed: set[Path] = set()
    todo = list(paths)
    for _ in range(MAX_PASSES):
        result.passes += 1
        # Not written (--diff): this pass reads the earlier passes' texts instead.
        texts = {} if write else {p: r.final for p, r in runs.items() if r.changed}
        with stand_ins(texts) if texts else nullcontext():
            wrote = _one_pass(todo, runs, failed, result, fix, write, report)
        if not wrote:
            break
        todo = [p for p in runs if p not in failed]
    result.runs = [runs[p] for p in runs if p not in failed or runs[p].changed]
    return result


def _one_pass(
    todo: list[Path],
    runs: dict[Path, FileRun],
    failed: set[Path],
    result: PassesResult,
    fix: Callable[[Path, SourceFile], FixOutcome],
    write: bool,
    report: Callable[[str], None],
) -> bool:
    """Fix each of ``todo`` once; whether any text changed."""
    wrote = False
    for path in todo:
        try:
            source = read_source(path)
            if not write and path in runs:
                source = replace(source, text=runs[path].final)
            outcome = fix(path, source)
        except FileProblem as exc:
            report(str(exc))
            result.problems += 1
            failed.add(path)
            continue
        if outcome.error is not None:
            report(f"{path}: {outcome.error}; left untouched")
            result.problems += 1
            failed.add(path)
            continue
        run = runs.get(path)
        if run is None:
            run = runs[path] = FileRun(path, source.text, outcome, final=source.text)
        run.outcome = outcome
        if outcome.source == source.text:
            continue
        if write:
            try:
                run.written = write_back(source, outcome.source)
            except FileProblem as exc:
                # Counted as a problem, never as changed: the file on disk is as it was.
                report(str(exc))
                result.problems += 1
                failed.add(path)
                continue
        wrote = True
        run.applied.extend(outcome.applied)
        run.final = outcome.source
    return wrote
