"""Public API: run a script under torch_xla and stream what the compiler did.

    handle = start(RunOptions(script="train.py", steps=20), on_event=print_event)
    ...
    handle.cancel()              # kills the whole process group, summary.status == "cancelled"
    summary = await handle.wait()

``run(options, on_event)`` is the same without the handle. Events are those of ``events.py``;
``on_event`` is called on the event loop thread and must not block.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .events import Event
from .summary import RunSummary

EventCallback = Callable[[Event], None]


@dataclass
class RunOptions:
    script: str | Path
    args: list[str] = field(default_factory=list)
    interpreter: str = sys.executable  # the script's interpreter, not necessarily ours
    device: str = "auto"  # auto | CPU | CUDA | TPU | NEURON; env PJRT_DEVICE also counts
    steps: int | None = None  # stop cleanly after this many torch_xla.sync steps
    timeout: float | None = None  # seconds; the run is killed and reported as "timeout"
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | Path | None = None  # default: the script's folder
    profiler: bool = True  # PT_XLA_DEBUG=1: pt-xla-profiler advice and fallback locations
    max_output_lines: int = 2000  # kept for traceback mapping; every line is still an event
    grace_s: float = 3.0  # SIGTERM -> SIGKILL delay on cancel
    # Explain recompilations from graph dumps for the first N steps or M compiled graphs,
    # whichever comes first (0 steps: off). See explain.py for what it costs.
    explain_steps: int = 30
    explain_graphs: int = 12


class RunHandle:
    """A run in progress: ``cancel()`` from anywhere on the loop, ``await wait()``."""

    def __init__(self) -> None:
        self._cancel = asyncio.Event()
        self.task: asyncio.Task[RunSummary] | None = None
        self.pid: int | None = None  # the child's pid == its process group id, once started

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    async def cancelled(self) -> None:
        await self._cancel.wait()

    async def wait(self) -> RunSummary:
        assert self.task is not None, "use start() to create a running handle"
        return await self.task


async def run(
    options: RunOptions, on_event: EventCallback | None = None, handle: RunHandle | None = None
) -> RunSummary:
    from .session import Session

    return await Session(options, on_event or (lambda _e: None), handle or RunHandle()).run()


def start(options: RunOptions, on_event: EventCallback | None = None) -> RunHandle:
    """Starts ``run`` as a task on the running loop and returns its handle."""
    handle = RunHandle()
    handle.task = asyncio.get_running_loop().create_task(run(options, on_event, handle))
    return handle
