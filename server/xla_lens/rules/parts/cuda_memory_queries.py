"""CUDA memory queries (XLA403): ``torch.cuda.max_memory_allocated()`` and its kin read CUDA's
allocator, which an XLA host does not have (they return 0 there; ``memory_summary`` and
``mem_get_info`` raise). Unguarded they are reported
at the call with advice; under ``if torch.cuda.is_available():`` they never run on XLA, but the
memory figure the script logs there silently goes missing (MAE's MetricLogger, held-out 7):
reported once per check, as information.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel
from ..base import Finding, Severity

MEMORY_QUERIES = {
    "torch.cuda.memory_allocated",
    "torch.cuda.max_memory_allocated",
    "torch.cuda.memory_reserved",
    "torch.cuda.max_memory_reserved",
    "torch.cuda.memory_summary",
    "torch.cuda.memory_stats",
    "torch.cuda.mem_get_info",
}


# Measured on torch 2.9 without CUDA: these raise, the others return 0 (or an empty dict).
RAISING_QUERIES = {
    "torch.cuda.memory_summary": "KeyError: 'allocated_bytes.all.current'",
    "torch.cuda.mem_get_info": 'RuntimeError: "Found no NVIDIA driver on your system"',
}


def memory_message(q: str) -> str:
    raised = RAISING_QUERIES.get(q)
    if raised is not None:
        return f"{q}() reports CUDA memory: on a host without CUDA it raises ({raised})"
    return f"{q}() reports CUDA memory: on XLA it reads nothing useful (0 on a host without CUDA)"


MEMORY_ADVICE = (
    "Use `xm.get_memory_info(device)` (a dict: bytes_used, bytes_limit, peak_bytes_used of "
    "the XLA device; TPU runtimes answer it, PJRT CPU raises UNIMPLEMENTED) and adapt the code "
    "that reads the result."
)


def skipped_memory_figure(model: ScriptModel, guard: ast.If, q: str, code: str) -> Finding:
    """Reported at the guard's test, once per guard: the engine leaves the CUDA-only body alone
    (the CUDA run keeps its figure), but on an XLA host the block is skipped and the memory
    figure the script logs there silently goes missing (MAE's MetricLogger, held-out 7)."""
    test = model.segment(guard.test)[:50]
    return Finding(
        code,
        f"{q}() runs only when `{test}` is true: on an XLA host it is skipped, so the memory "
        "figure it gives is missing from what the script reports",
        model.span(guard.test),
        Severity.INFORMATION,
        manual=f"To keep the figure on XLA, read `xm.get_memory_info(device)` (TPU runtimes "
        f"answer it, PJRT CPU raises UNIMPLEMENTED) where `if {test}:` is false, e.g. in an "
        "`else:` branch; the CUDA query can stay for the CUDA run.",
    )
