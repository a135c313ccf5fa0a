"""``xla-lens run SCRIPT [--json] [--steps N] [--device D] [--interpreter PY] [--timeout S]
[-- ARGS]``: the command-line face of the runner (the cli package dispatches here).

Human mode passes the script's output through, then prints the device and why, a table of
source lines with compile counts/times, and the problems. ``--json`` prints the event stream,
one JSON object per line. Exit code: the script's (128+N for signal N, 124 timeout, 130
cancelled), 2 for usage errors and refused scripts.
"""

from __future__ import annotations

import argparse
import asyncio
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
    )
    printer = _JsonPrinter(sys.stdout) if ns.json else _HumanPrinter(sys.stdout, sys.stderr)
    summary = asyncio.run(_run(options, printer))
    if not ns.json:
        print_summary(summary, sys.stdout)
    return exit_code(summary)


async def _run(options: RunOptions, printer) -> RunSummary:
    handle = start(options, printer)
    loop = asyncio.get_running_loop()
    # Ctrl-C / SIGTERM cancel the run (killing the script's whole group) instead of leaving it.
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, handle.cancel)
    return await handle.wait()


def exit_code(summary: RunSummary) -> int:
    if summary.status == "refused":
        return USAGE_ERROR
    if summary.status == "cancelled":
        return 130
    if summary.status == "timeout":
        return 124
    if summary.signal:
        return 128 + signal.Signals[summary.signal].value
    return summary.returncode or 0


class _JsonPrinter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        self.out.write(event.to_json() + "\n")
        self.out.flush()


class _HumanPrinter:
    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err

    def __call__(self, event: Event) -> None:
        if isinstance(event, Output):
            (self.out if event.stream == "stdout" else self.err).write(event.text + "\n")
        elif isinstance(event, DeviceChosen):
            self.err.write(f"xla-lens: device {event.device}: {event.reason}\n")
        elif isinstance(event, Profiler):
            self.err.write(f"xla-lens: pt-xla-profiler: {event.text}\n")
        elif isinstance(event, Refused):
            self.err.write(f"xla-lens run: refused: {event.message}\n")


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def print_summary(s: RunSummary, out: TextIO) -> None:
    if s.status == "refused":
        return
    w = out.write
    how = f"exit {s.returncode}" if s.signal is None else f"killed by {s.signal}"
    w(
        f"\nxla-lens: {_rel(s.script)}: {s.status} ({how}) after {s.duration_s:.1f}s, "
        f"{s.steps} steps on {s.device}\n"
    )
    w(f"  device: {s.device_reason}\n")
    w(
        f"  compile {s.compile_s:.2f}s ({s.uncached_compiles} uncached, {s.cached_compiles} cached)"
        f", execute {s.execute_s:.2f}s, transfer to host {s.transfer_from_device_s:.2f}s\n"
    )
    if s.lines:
        width = max(len(f"{_rel(ls.file)}:{ls.line}") for ls in s.lines)
        w(
            f"\n  {'line':<{width}} {'compiles':>8} {'uncached':>8} {'compile s':>9} "
            f"{'executes':>8} {'execute s':>9}  cause\n"
        )
        for ls in s.lines:
            cause = max(ls.causes, key=ls.causes.get) if ls.causes else ""
            where = f"{_rel(ls.file)}:{ls.line}"
            w(
                f"  {where:<{width}} {ls.compiles:>8} {ls.uncached_compiles:>8} {ls.compile_s:>9.3f} "
                f"{ls.executes:>8} {ls.execute_s:>9.3f}  {cause}\n"
            )
    if s.problems:
        w("\n  problems:\n")
        for p in s.problems:
            where = f"{_rel(p.file)}:{p.line}" if p.file else "(run)"
            w(f"  {where}: {p.kind}: {p.message}\n")
    if s.exception is not None:
        e = s.exception
        where = f"{_rel(e.file)}:{e.line}" if e.file else "(no user frame)"
        w(f"\n  crashed at {where}: {e.exc_type}: {e.message}\n")
