"""``xla-lens run SCRIPT [--json] [--steps N] [--device D] [--interpreter PY] [--timeout S]
[-- ARGS]``: the command-line face of the runner (the cli package dispatches here).

Human mode passes the script's output through, then prints the device and why, a table of
source lines with compile counts/times, and the problems. ``--json`` prints the event stream,
one JSON object per line. Exit code: the script's (128+N for signal N, 124 timeout, 128+N
when signal N cancelled it: 130 for Ctrl-C), 2 for usage errors and refused scripts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from typing import TextIO

from .api import RunOptions, start
from .events import DeviceChosen, Event, Output, Profiler, Refused
from .summary import RunSummary

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2 with usage, no traceback: keep that
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"xla-lens run: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="xla-lens run",
        description="Run a script under torch_xla and report "
        "what the XLA compiler did, per source line.",
    )
    p.add_argument("script")
    p.add_argument("--json", action="store_true", help="print the JSON-lines event stream")
    p.add_argument("--steps", type=int, default=None, help="stop after N torch_xla.sync steps")
    p.add_argument(
        "--device", default="auto", type=str.upper, choices=["AUTO", "CPU", "CUDA", "TPU", "NEURON"]
    )
    p.add_argument(
        "--interpreter",
        default=sys.executable,
        help="Python that runs the script (default: this one)",
    )
    p.add_argument("--timeout", type=float, default=None, help="kill the run after S seconds")
    p.add_argument(
        "--explain-steps",
        type=int,
        default=RunOptions.explain_steps,
        metavar="N",
        help="dump graphs for the first N steps to explain recompilations at their cause "
        f"(default {RunOptions.explain_steps}; 0: off)",
    )
    p.epilog = "Arguments after -- go to the script."
    return p


def run_main(argv: list[str]) -> int:
    ours, args = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    ns = build_parser().parse_args(ours)
    if ns.steps is not None and ns.steps < 1:
        print("xla-lens run: error: --steps must be >= 1", file=sys.stderr)
        return USAGE_ERROR
    options = RunOptions(
        script=ns.script,
        args=args,
        interpreter=ns.interpreter,
        device=ns.device.lower() if ns.device == "AUTO" else ns.device,
        steps=ns.steps,
        timeout=ns.timeout,
        explain_steps=max(0, ns.explain_steps),
    )
    printer = _JsonPrinter(sys.stdout) if ns.json else _HumanPrinter(sys.stdout, sys.stderr)
    stopped_by: list[int] = []
    summary = asyncio.run(_run(options, printer, stopped_by))
    if not ns.json:
        with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
            print_summary(summary, sys.stdout)
    return exit_code(summary, stopped_by[0] if stopped_by else signal.SIGINT)


async def _run(options: RunOptions, printer, stopped_by: list[int]) -> RunSummary:
    handle = start(options, printer)
    loop = asyncio.get_running_loop()

    def stop(sig: int) -> None:
        stopped_by.append(sig)
        handle.cancel()

    # Ctrl-C, SIGTERM and a dropped terminal (SIGHUP) cancel the run, killing the script's
    # whole group. SIGKILL cannot be caught: the run's lifeline ends it then (lifeline.py).
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop, sig)
    return await handle.wait()


def exit_code(summary: RunSummary, cancelled_by: int = signal.SIGINT) -> int:
    if summary.status == "refused":
        return USAGE_ERROR
    if summary.status == "cancelled":
        return 128 + cancelled_by  # 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP
    if summary.status == "timeout":
        return 124
    if summary.signal:
        return 128 + signal.Signals[summary.signal].value
    return summary.returncode or 0


class _JsonPrinter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        with contextlib.suppress(OSError):  # a closed terminal must not break the run's end
            self.out.write(event.to_json() + "\n")
            self.out.flush()


class _HumanPrinter:
    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err

    def __call__(self, event: Event) -> None:
        with contextlib.suppress(OSError):  # a closed terminal must not break the run's end
            self._print(event)

    def _print(self, event: Event) -> None:
        if isinstance(event, Output):
            (self.out if event.stream == "stdout" else self.err).write(event.text + "\n")
        elif isinstance(event, DeviceChosen):
            self.err.write(f"xla-lens: device {event.device}: {event.reason}\n")
        elif isinstance(event, Profiler):
            self.err.write(f"xla-lens: pt-xla-profiler: {event.text}\n")
        elif isinstance(event, Refused):
            self.err.write(f"xla-lens run: refused: {event.message}\n")


def _rel_to(path: str, start: str | None = None) -> str:
    try:
        rel = os.path.relpath(path, start)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def print_summary(s: RunSummary, out: TextIO, relative_to: str | None = None) -> None:
    """``compiles`` are graphs XLA built (uncached), ``cached`` the lookups that found one:
    the same two numbers the editor shows. Paths are relative to ``relative_to`` (default:
    the working directory)."""
    if s.status == "refused":
        return
    w = out.write

    def _rel(path: str) -> str:
        return _rel_to(path, relative_to)

    how = f"exit {s.returncode}" if s.signal is None else f"killed by {s.signal}"
    w(
        f"\nxla-lens: {_rel(s.script)}: {s.status} ({how}) after {s.duration_s:.1f}s, "
        f"{s.steps} steps on {s.device}\n"
    )
    w(f"  device: {s.device_reason}\n")
    w(
        f"  compile {s.compile_s:.2f}s ({s.uncached_compiles} compiles, {s.cached_compiles} cached)"
        f", execute {s.execute_s:.2f}s, transfer to host {s.transfer_from_device_s:.2f}s\n"
    )
    if s.explain_window_step:
        w(
            f"  recompilations explained from the graphs of steps 1-{s.explain_window_step}"
            " (--explain-steps)\n"
        )
    if s.lines:
        width = max(len(f"{_rel(ls.file)}:{ls.line}") for ls in s.lines)
        w(
            f"\n  {'line':<{width}} {'compiles':>8} {'cached':>8} {'compile s':>9} "
            f"{'executes':>8} {'execute s':>9}  cause\n"
        )
        for ls in s.lines:
            cause = max(ls.causes, key=ls.causes.get) if ls.causes else ""
            where = f"{_rel(ls.file)}:{ls.line}"
            w(
                f"  {where:<{width}} {ls.uncached_compiles:>8} {ls.compiles - ls.uncached_compiles:>8} "
                f"{ls.compile_s:>9.3f} "
                f"{ls.executes:>8} {ls.execute_s:>9.3f}  {cause}\n"
            )
    if s.problems:
        w("\n  problems:\n")
        for p in s.problems:
            where = f"{_rel(p.file)}:{p.line}" if p.file else "(run)"
            w(f"  {where}: {p.kind}: {p.message}\n")
            if p.changed:
                w(f"      changed ({p.change_kind}): {p.changed}\n")
            if p.hint:
                w(f"      hint: {p.hint}\n")
            if p.doc_url:
                w(f"      see {p.doc_url}\n")
    if s.exception is not None:
        e = s.exception
        where = f"{_rel(e.file)}:{e.line}" if e.file else "(no user frame)"
        w(f"\n  crashed at {where}: {e.exc_type}: {e.message}\n")
