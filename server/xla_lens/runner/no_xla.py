"""The "no-xla" problem: a run that ended without doing any XLA work.

An unconverted CUDA script runs happily on plain PyTorch (on the CPU when no GPU is usable), so
without this the run looks fine and reports "0 compiles". The evidence comes from the bootstrap
hook in every process of the run: which ones reported in, which imported torch_xla, and how
many XLA tensors each had created when it exited. A run is only judged when that evidence is
complete: the hook ran, and every process that imported torch_xla reported at exit.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from .collector import Collector
from .events import Problem

KIND = "no-xla"
MESSAGE = "this script never used the XLA device — convert it first"
# Statuses whose run went as far as the script let it; a cancelled or timed-out run may just
# not have reached its XLA part yet, and a step-limited one synced by definition.
_JUDGED = ("ok", "failed")
_DEVICE_CALLS = {("torch", "device"), ("torch_xla", "device"), ("xm", "xla_device")}


def no_xla_problem(
    script: Path, status: str, collector: Collector, compiles: int
) -> Problem | None:
    c = collector
    if status not in _JUDGED or not c.hook_pids:
        return None
    if compiles or c.steps or c.graph_events or any(c.xla_tensors.values()):
        return None
    if not c.xla_pids.issubset(c.xla_tensors):
        return None  # a process imported torch_xla and never said what it did with it
    source = _read(script)
    if status == "failed" and "torch_xla" in source:
        # A converted script that crashed before its XLA part: the crash is the news.
        return None
    if c.xla_pids:
        detail = (
            "it imported torch_xla but created no tensor on torch_xla.device() and compiled nothing"
        )
    else:
        detail = "torch_xla was never imported, so it ran on plain PyTorch"
    return Problem(KIND, str(script), device_line(source), f"{MESSAGE}: {detail}")


def _read(script: Path) -> str:
    try:
        return script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def device_line(source: str) -> int:
    """The first line that picks a device ("cuda", ``.cuda()``, ``torch.device``), else 1."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return 1
    code = [t for t in tokens if t.type in (tokenize.NAME, tokenize.OP, tokenize.STRING)]
    for i, tok in enumerate(code):
        before = code[i - 1].string if i >= 1 else ""
        owner = code[i - 2].string if i >= 2 else ""
        if tok.type == tokenize.NAME and before == ".":
            if tok.string == "cuda" or (owner, tok.string) in _DEVICE_CALLS:
                return tok.start[0]
        elif tok.type == tokenize.STRING and _is_cuda_literal(tok.string):
            return tok.start[0]
    return 1


def _is_cuda_literal(text: str) -> bool:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))
