"""Shared helpers for runner tests: real subprocesses, real torch_xla on CPU PJRT."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from xla_lens.runner import RunOptions, RunSummary, run
from xla_lens.runner.events import Event

DATA = Path(__file__).parent / "data"
PYTHON = sys.executable  # the venv's interpreter, which has torch_xla


def marked_line(script: Path, marker: str) -> int:
    """1-based line of the comment ``marker`` in ``script``: tests never hard-code lines."""
    for i, text in enumerate(script.read_text().splitlines(), start=1):
        if marker in text:
            return i
    raise AssertionError(f"{marker} not in {script}")


def run_collect(options: RunOptions) -> tuple[RunSummary, list[Event]]:
    events: list[Event] = []
    summary = asyncio.run(run(options, events.append))
    return summary, events


def of_type(events: list[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]
