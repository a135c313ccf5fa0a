"""The words a run shows in the editor: the device sentence, the progress line, the end line,
and the CLI's own summary table. One place, so the toast, the progress notification, the code
lens and the output channel say the same thing.

"compiles" means the same everywhere: uncached compilations, i.e. graphs XLA really built.
A graph found in the cache is a "cached" hit and is counted separately, never added in.
"""

from __future__ import annotations

import io
import os
import re

from ..runner import RunSummary
from ..runner.cli import print_summary
from ..runner.events import DeviceChosen

# Statuses where the script did not get to finish on its own: no ✓, no exit code.
STOPPED = {"cancelled": "cancelled", "timeout": "timed out", "refused": "refused"}


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _major_minor(version: str | None) -> str:
    m = re.match(r"(\d+\.\d+)", version or "")
    return m.group(1) if m else (version or "?")


def device_sentence(ev: DeviceChosen) -> str:
    """One short sentence for the toast; the full reason goes to the output and the lens."""
    if ev.device == "CPU" and ev.gpu_visible and ev.requested == "auto":
        version = _major_minor(ev.torch_xla_version)
        backend = "CUDA backend" if "no CUDA PJRT" in ev.reason else "CUDA plugin"
        return f"GPU found, but torch_xla {version} has no {backend}: running on CPU PJRT"
    if ev.device == "CPU":
        if ev.requested != "auto":
            return "Running on CPU PJRT (requested)"
        return "No GPU, TPU or Neuron device found: running on CPU PJRT"
    gpu = f" ({ev.gpu_names[0]})" if ev.device == "CUDA" and ev.gpu_names else ""
    return f"Running on {ev.device}{gpu}"


def progress_message(step: int, compiles: int, device: str | None) -> str:
    return f"step {step} · {plural(compiles, 'compile')} · device {device or '?'}"


def end_message(summary: RunSummary) -> str:
    """The last progress line and the base of the run's toast."""
    if summary.status == "refused":
        return f"refused: {summary.message}"
    head = STOPPED.get(summary.status, summary.status)
    if summary.status == "failed" and summary.returncode is not None:
        head = f"failed (exit {summary.returncode})"
    elif summary.status == "signal":
        head = f"killed by {summary.signal}"
    return (
        f"{head} · {plural(summary.steps, 'step')} · "
        f"{plural(summary.uncached_compiles, 'compile')} · {summary.compile_s:.1f} s compiling"
    )


def summary_text(summary: RunSummary) -> str:
    """The CLI's end-of-run report (``xla-lens run`` prints the same), without the leading
    blank line."""
    out = io.StringIO()
    # Paths relative to the script's folder: the server's own working directory is not the
    # workspace's.
    print_summary(summary, out, relative_to=os.path.dirname(summary.script))
    return out.getvalue().strip("\n")
