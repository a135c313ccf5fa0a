"""Run a script under torch_xla in a subprocess and report, per source line, what XLA did.

Independent of the engine, lsp and cli packages: they use this one, never the reverse.
"""

from .api import EventCallback, RunHandle, RunOptions, run, start
from .summary import LineStats, RunSummary

__all__ = [
    "EventCallback",
    "LineStats",
    "RunHandle",
    "RunOptions",
    "RunSummary",
    "run",
    "start",
]
