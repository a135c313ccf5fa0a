"""One run: refuse early, pick the device, start the child, watch it, end it, summarise."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import tempfile
import time
from collections import deque
from pathlib import Path

from . import process
from .api import EventCallback, RunHandle, RunOptions
from .collector import Collector, make_exception
from .debug_parse import DebugParser
from .device import ProbeError, choose_device, probe_interpreter
from .events import DeviceChosen, Event, Exited, Output, Refused, Started, Summary
from .explain import dump_env, explain_compiles, read_graphs
from .frames import UserCode, parse_traceback
from .graph_diff import Explanation
from .lifeline import Lifeline
from .no_xla import no_xla_problem
from .problems import find_problems
from .summary import RunSummary, add_step_totals, group_lines
from .watchdog import RUN_DIR_PREFIX

BOOTSTRAP = Path(__file__).parent / "bootstrap"
_POLL_S = 0.1
_STUCK_MARKERS = ("may be stuck", "Termination timeout")


class Session:
    def __init__(self, options: RunOptions, on_event: EventCallback, handle: RunHandle) -> None:
        self.opt = options
        self.on_event = on_event
        self.handle = handle
        self.script = Path(options.script).resolve()
        self.user = UserCode(self.script)
        self.summary = RunSummary(script=str(self.script), status="ok", step_limit=options.steps)
        self.collector = Collector(self.user, self.emit)
        self.parser = DebugParser()
        self.stderr_tail: deque[str] = deque(maxlen=max(50, options.max_output_lines))
        self.stuck: list[str] = []
        self.lines_seen = 0
        self.explanations: list[Explanation] = []  # recompilations explained from graph dumps

    def emit(self, event: Event) -> None:
        self.on_event(event)

    async def run(self) -> RunSummary:
        refusal = self._check_script()
        if refusal is None:
            refusal = await self._pick_device()
        if refusal is not None:
            self.summary.status = "refused"
            self.summary.message = refusal.message
            self.emit(refusal)
            self.emit(Summary(self.summary.to_dict()))
            return self.summary
        # The lifeline exists before the folder, so a dead owner never leaves the folder behind.
        lifeline = Lifeline.open()
        try:
            with tempfile.TemporaryDirectory(prefix=RUN_DIR_PREFIX) as tmp:
                lifeline.guard_dir(Path(tmp))
                await self._run_child(Path(tmp), lifeline)
        finally:
            await lifeline.close()
        self.emit(Summary(self.summary.to_dict()))
        return self.summary

    def _check_script(self) -> Refused | None:
        try:
            source = self.script.read_bytes()
        except OSError as exc:
            return Refused(f"cannot read {self.script}: {exc.strerror or exc}", str(self.script))
        try:
            compile(source, str(self.script), "exec", dont_inherit=True)
        except SyntaxError as exc:
            where = f"{exc.filename}:{exc.lineno}"
            return Refused(
                f"{where}: {type(exc).__name__}: {exc.msg}; the script was not started",
                exc.filename,
                exc.lineno,
            )
        except ValueError as exc:  # null bytes
            return Refused(f"{self.script}: {exc}; the script was not started", str(self.script))
        return None

    async def _pick_device(self) -> Refused | None:
        requested = self.opt.device
        if requested.lower() == "auto" and self.opt.env.get("PJRT_DEVICE"):
            requested = self.opt.env["PJRT_DEVICE"]
        try:
            probe = await probe_interpreter(self.opt.interpreter)
        except ProbeError as exc:
            return Refused(str(exc))
        choice = choose_device(probe, requested)
        if choice.device is None:
            return Refused(choice.reason)
        self.summary.device = choice.device
        self.summary.device_reason = choice.reason
        self.emit(
            DeviceChosen(
                device=choice.device,
                requested=requested,
                reason=choice.reason,
                torch_xla_version=probe.torch_xla,
                gpu_visible=probe.gpu_visible,
                gpu_names=probe.gpu_names,
            )
        )
        return None

    def _child_env(self, tmp: Path, lifeline: Lifeline) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.opt.env)
        env.update(lifeline.child_env())
        env["PJRT_DEVICE"] = self.summary.device or "CPU"
        env["PT_XLA_DEBUG_LEVEL"] = "2"
        env["PT_XLA_DEBUG_FILE"] = str(tmp / "debug.txt")
        if self.opt.profiler:
            env["PT_XLA_DEBUG"] = "1"
        env.update(dump_env(tmp, self.opt.explain_steps, self.opt.explain_graphs, env))
        env["XLA_LENS_CHANNEL"] = str(tmp / "channel.jsonl")
        env["XLA_LENS_MAX_STEPS"] = str(self.opt.steps or 0)
        env["PYTHONUNBUFFERED"] = "1"  # output events as the script prints, not at exit
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(BOOTSTRAP) + (os.pathsep + old if old else "")
        return env

    async def _run_child(self, tmp: Path, lifeline: Lifeline) -> None:
        argv = [self.opt.interpreter, str(self.script), *self.opt.args]
        cwd = str(self.opt.cwd or self.script.parent)
        t0 = time.monotonic()
        env = self._child_env(tmp, lifeline)
        proc = await process.spawn(argv, env, cwd, pass_fds=(lifeline.child_fd,))
        pgid = proc.pid
        lifeline.guard_group(pgid)
        self.handle.pid = pgid
        self.emit(Started(argv=argv, cwd=cwd, pid=proc.pid, script=str(self.script)))
        debug = process.FileTail(tmp / "debug.txt")
        channel = process.FileTail(tmp / "channel.jsonl")

        def drain_debug(upto: int | None) -> None:
            for offset, line in debug.read_lines(upto):
                self.collector.on_records(self.parser.feed(line, offset))

        def poll() -> None:
            for _, line in channel.read_lines():
                with contextlib.suppress(ValueError):
                    self.collector.on_message(json.loads(line), drain_debug)
            drain_debug(None)

        pumps = [
            asyncio.create_task(process.pump_lines(proc.stdout, self._line("stdout"))),
            asyncio.create_task(process.pump_lines(proc.stderr, self._line("stderr"))),
        ]
        ended = "exit"
        try:
            ended = await self._watch(proc, poll)
        finally:
            if ended != "exit" or proc.returncode is None:
                await process.kill_group(proc, pgid, self.opt.grace_s)
            leftovers = await process.reap_leftovers(pgid)
            # A fork that was killed may not have closed our pipes yet: do not wait forever.
            await asyncio.wait(pumps, timeout=5.0)
            for task in pumps:
                task.cancel()
            poll()
            self.collector.on_records(self.parser.finish())
            self.collector.finish()
            debug.close()
            channel.close()
            # parsing and diffing big graphs takes a while: keep the event loop (the server) free
            await asyncio.to_thread(self._explain, tmp)
        self._finish(proc.returncode, ended, time.monotonic() - t0, leftovers)

    def _explain(self, tmp: Path) -> None:
        try:
            graphs = read_graphs(tmp)
            self.explanations = explain_compiles(self.collector.graph_events, graphs, self.user)
        except Exception as exc:  # an unreadable dump costs the explanation, never the run
            self.collector.hook_errors.append(f"graph dump: {exc!r}")

    async def _watch(self, proc: asyncio.subprocess.Process, poll) -> str:
        # proc.wait() also waits for the pipes to close, which a forked grandchild can hold
        # open forever: the exit is seen through returncode instead.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.opt.timeout if self.opt.timeout else None
        cancel = asyncio.create_task(self.handle.cancelled())
        try:
            while True:
                poll()
                if proc.returncode is not None:
                    return "exit"
                done, _ = await asyncio.wait({cancel}, timeout=_POLL_S)
                if cancel in done:
                    return "cancelled"
                if deadline is not None and loop.time() > deadline:
                    return "timeout"
        finally:
            cancel.cancel()

    def _line(self, stream: str):
        def on_line(text: str, truncated: bool) -> None:
            self.lines_seen += 1
            if stream == "stderr":
                self.stderr_tail.append(text)
                if any(m in text for m in _STUCK_MARKERS) and len(self.stuck) < 5:
                    self.stuck.append(text)
            self.emit(Output(stream, text, truncated))

        return on_line

    def _finish(self, rc: int | None, ended: str, duration: float, leftovers: int) -> None:
        s, c = self.summary, self.collector
        sig = signal.Signals(-rc).name if rc is not None and rc < 0 else None
        if ended in ("cancelled", "timeout"):
            status = ended
        elif sig:
            status = "signal"
        elif rc == 0 and c.step_limit_hit:
            status = "step-limit"
        else:
            status = "ok" if rc == 0 else "failed"
        if c.exception is None and status == "failed":
            parsed = parse_traceback(list(self.stderr_tail))
            if parsed is not None:
                frames, exc_type, message = parsed
                c.exception = make_exception(self.user, frames, exc_type, message)
        if c.exception is not None and status in ("ok", "step-limit"):
            c.exception = None  # caught and handled by the script (SystemExit from the hook)
        if c.exception is not None:
            self.emit(c.exception)
        s.status, s.returncode, s.signal = status, rc, sig
        s.duration_s, s.steps, s.leftover_killed = duration, c.steps, leftovers
        s.exception = c.exception
        s.explain_window_step = c.explain_window_step
        s.output_lines_dropped = max(0, self.lines_seen - self.opt.max_output_lines)
        add_step_totals(s, c.deltas)
        for op in c.fallback_ops:
            s.fallbacks.setdefault(op, 0)
        s.lines = group_lines(c.graph_events)
        s.problems = find_problems(
            s.lines,
            c.graph_events,
            s.fallbacks,
            c.fallback_sites,
            self.user,
            s.exception,
            s.compile_s,
            s.execute_s,
            self.stuck,
            stopped_early=status in ("cancelled", "timeout"),
            explanations=self.explanations,
        )
        no_xla = no_xla_problem(self.script, status, c, s.uncached_compiles + s.cached_compiles)
        if no_xla is not None:
            s.problems.append(no_xla)
        for problem in s.problems:
            self.emit(problem)
        self.emit(Exited(status, rc, sig, duration, leftovers))
