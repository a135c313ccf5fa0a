"""Turns the two side channels of a run into events.

- the debug file (``PT_XLA_DEBUG_FILE``): compile/execute blocks with cause, hash and frames;
- the bootstrap channel: one message per step with metric deltas, the debug file's size at that
  moment and the CompileTime/ExecuteTime samples of the step.

A block belongs to the first step whose recorded debug offset lies past it, so the step of every
compile is exact even though the two files are read separately; its duration is the metric
sample of the same rank within that step (XLA records them in the same order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .debug_parse import Block, FallbackSite, ProfilerLine, Record
from .events import Compile, Event, ExceptionRaised, Execute, Frame, Profiler, Step
from .frames import UserCode


class Collector:
    def __init__(self, user: UserCode, emit: Callable[[Event], None]) -> None:
        self.user = user
        self.emit = emit
        self.pending: list[Block] = []
        self.graph_events: list[Compile | Execute] = []
        self.deltas: list[Step] = []  # every step's delta, plus the final one (step == 0)
        self.steps = 0
        self.step_limit_hit = False
        self.fallback_sites: list[FallbackSite] = []
        self.fallback_ops: set[str] = set()
        self.exception: ExceptionRaised | None = None
        self.hook_errors: list[str] = []
        self.explain_window_step: int | None = None  # the step after which graph dumps stopped
        self._primary_pid: int | None = None
        # Whether the script used XLA at all, from every process of the run (see no_xla.py).
        self.hook_pids: set[int] = set()  # processes whose bootstrap hook reported in
        self.xla_pids: set[int] = set()  # ... that imported torch_xla
        self.xla_tensors: dict[int, int] = {}  # ... XLA tensors created, from their final report

    def on_records(self, records: list[Record]) -> None:
        for rec in records:
            if isinstance(rec, Block):
                self.pending.append(rec)
            elif isinstance(rec, ProfilerLine):
                self.emit(Profiler(rec.text))
            else:
                self.fallback_sites.append(rec)

    def on_message(self, msg: dict[str, Any], drain_debug: Callable[[int | None], None]) -> None:
        kind = msg.get("t")
        self._note_xla_use(kind, msg)
        if kind in ("step", "final") and self._is_primary(msg):
            offset = msg.get("debug_offset", -1)
            drain_debug(offset if offset >= 0 else None)
            delta = msg.get("d", {})
            step_no = msg["step"] if kind == "step" else self.steps + 1
            self._flush(offset, step_no, delta)
            step = _step_event(msg, delta, step_no if kind == "step" else 0)
            self.deltas.append(step)
            if kind == "step":
                self.steps = msg["step"]
                self.emit(step)
            else:
                self.fallback_ops.update(msg.get("fallback_ops", []))
        elif kind == "step_limit":
            self.step_limit_hit = True
        elif kind == "exception" and self.exception is None:
            frames = [Frame(fn, file, line) for file, line, fn in msg.get("frames", [])]
            self.exception = make_exception(self.user, frames, msg["exc_type"], msg["message"])
        elif kind == "hook_error":
            self.hook_errors.append(msg.get("message", ""))
        elif kind == "explain_window" and self._is_primary(msg):
            self.explain_window_step = msg.get("step")

    def _note_xla_use(self, kind: Any, msg: dict[str, Any]) -> None:
        pid = msg.get("pid")
        if not isinstance(pid, int):
            return
        if kind == "hello":
            self.hook_pids.add(pid)
        elif kind == "xla_imported":
            self.xla_pids.add(pid)
        elif kind == "final":
            self.xla_pids.add(pid)
            if isinstance(msg.get("xla_tensors"), int):
                self.xla_tensors[pid] = msg["xla_tensors"]

    def finish(self) -> None:
        """Blocks read after the last report (a crash, a cancel) have no duration."""
        self._flush(-1, self.steps + 1, {})

    def _is_primary(self, msg: dict[str, Any]) -> bool:
        # Only local rank 0 writes the debug file, so only its steps pair with blocks.
        if msg.get("rank", -1) not in (0, -1):
            return False
        if self._primary_pid is None:
            self._primary_pid = msg.get("pid")
        return msg.get("pid") == self._primary_pid

    def _flush(self, offset: int, step: int, delta: dict[str, Any]) -> None:
        if offset >= 0:
            mine = [b for b in self.pending if b.offset < offset]
        else:
            mine = list(self.pending)
        self.pending = [b for b in self.pending if b not in mine]
        times = {
            "compile": list(delta.get("CompileTime", {}).get("each_s", [])),
            "execute": list(delta.get("ExecuteTime", {}).get("each_s", [])),
        }
        for block in mine:
            seconds = times[block.kind].pop(0) if times[block.kind] else None
            frame = self.user.pick(block.frames)
            cls = Compile if block.kind == "compile" else Execute
            ev = cls(
                cause=block.cause,
                graph_hash=block.graph_hash,
                inputs=block.inputs,
                outputs=block.outputs,
                file=frame.file if frame else None,
                line=frame.line if frame else None,
                function=frame.function if frame else None,
                step=step,
                seconds=seconds,
                frames=block.frames,
            )
            self.graph_events.append(ev)
            self.emit(ev)


def _step_event(msg: dict[str, Any], d: dict[str, Any], step: int) -> Step:
    def metric(name: str) -> dict[str, Any]:
        return d.get(name, {}) or {}

    return Step(
        step=step,
        wall_s=float(msg.get("wall_s", 0.0)),
        uncached_compiles=int(d.get("UncachedCompile", 0)),
        cached_compiles=int(d.get("CachedCompile", 0)),
        compile_s=float(metric("CompileTime").get("s", 0.0)),
        execute_s=float(metric("ExecuteTime").get("s", 0.0)),
        transfer_from_device_s=float(metric("TransferFromDeviceTime").get("s", 0.0)),
        transfer_from_device_count=int(metric("TransferFromDeviceTime").get("count", 0)),
        fallbacks=dict(d.get("fallbacks", {})),
        pid=int(msg.get("pid", 0)),
    )


def make_exception(
    user: UserCode, frames_outermost_first: list[Frame], exc_type: str, message: str
) -> ExceptionRaised:
    frame = user.pick(frames_outermost_first, innermost_first=False)
    return ExceptionRaised(
        exc_type=exc_type,
        message=message,
        file=frame.file if frame else None,
        line=frame.line if frame else None,
        traceback=frames_outermost_first,
    )
