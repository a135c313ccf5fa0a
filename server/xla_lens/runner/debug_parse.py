"""Incremental parser for torch_xla's ``PT_XLA_DEBUG_LEVEL=2`` analysis text.

Format verified on torch_xla 2.9.0 (CPU PJRT): every compilation / execution is a block of lines
prefixed ``Compilation Analysis:`` / ``Execution Analysis:``, opened and closed by ``====``
rules, holding the cause, ``Graph Hash:``, input/output counts and the
``Python Frame Triggered Execution:`` list, innermost frame first. ``Compilation Analysis``
only appears for uncached compilations. ``PT_XLA_DEBUG=1`` adds ``pt-xla-profiler:`` lines and,
at exit, an "Unlowered Op usage summary" whose ``FRAME (count=N):`` blocks locate CPU fallbacks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .events import Frame

_FRAME = re.compile(r"^(\S+) \((.+):(\d+)\)$")
_PREFIX = re.compile(r"^(Compilation|Execution|Post Compilation) Analysis: ?(.*)$")
_FALLBACK_FRAME_HEADER = re.compile(r"^FRAME \(count=(\d+)\):$")


@dataclass
class Block:
    kind: str  # "compile" | "execute"
    offset: int  # byte offset of the block's first line in the debug file
    cause: str = ""
    graph_hash: str = ""
    inputs: int | None = None
    outputs: int | None = None
    frames: list[Frame] = field(default_factory=list)


@dataclass
class ProfilerLine:
    offset: int
    text: str


@dataclass
class FallbackSite:
    count: int
    frames: list[Frame]


Record = Block | ProfilerLine | FallbackSite


class DebugParser:
    """Feed it lines with their byte offsets; it returns the records each line completes."""

    def __init__(self) -> None:
        self._block: Block | None = None
        self._section = ""
        self._closing = False
        self._in_fallback_summary = False
        self._fallback: FallbackSite | None = None

    def feed(self, line: str, offset: int) -> list[Record]:
        line = line.rstrip("\n")
        m = _PREFIX.match(line)
        if m:
            return self._analysis_line(m.group(1), m.group(2).strip(), offset)
        if line.startswith("pt-xla-profiler:"):
            return [ProfilerLine(offset, line[len("pt-xla-profiler:") :].strip())]
        return self._fallback_line(line.strip())

    def finish(self) -> list[Record]:
        out: list[Record] = []
        if self._block is not None and self._block.graph_hash:
            out.append(self._block)
        if self._fallback is not None and self._fallback.frames:
            out.append(self._fallback)
        self._block = self._fallback = None
        return out

    def _analysis_line(self, which: str, body: str, offset: int) -> list[Record]:
        if which == "Post Compilation":
            return []
        kind = "compile" if which == "Compilation" else "execute"
        if body.startswith("===="):
            # Each block is ==== ... ---- ====: the second rule closes, it does not open.
            if self._closing:
                self._closing = False
            elif self._block is None:
                self._block = Block(kind, offset)
                self._section = ""
            return []
        block = self._block
        if block is None or block.kind != kind:
            return []
        if body.startswith("----"):
            self._block = None
            self._closing = True
            return [block]
        if body in ("Compilation Cause", "Execution Cause"):
            self._section = "cause"
        elif body.startswith("Graph Info:"):
            self._section = "graph"
        elif body.startswith("Python Frame Triggered Execution:"):
            self._section = "frames"
        elif body.startswith("Graph Hash:"):
            block.graph_hash = body.split(":", 1)[1].strip()
        elif body.startswith("Number of Graph Inputs:"):
            block.inputs = _int(body)
        elif body.startswith("Number of Graph Outputs:"):
            block.outputs = _int(body)
        elif self._section == "cause":
            block.cause = f"{block.cause} {body}".strip()
        elif self._section == "frames":
            fm = _FRAME.match(body)
            if fm:
                block.frames.append(Frame(fm.group(1), fm.group(2), int(fm.group(3))))
        return []

    def _fallback_line(self, line: str) -> list[Record]:
        if line.startswith("Unlowered Op usage summary"):
            self._in_fallback_summary = True
            return []
        if not self._in_fallback_summary:
            return []
        out: list[Record] = []
        header = _FALLBACK_FRAME_HEADER.match(line)
        fm = _FRAME.match(line)
        if header or line.startswith("===="):
            if self._fallback is not None and self._fallback.frames:
                out.append(self._fallback)
            self._fallback = FallbackSite(int(header.group(1)), []) if header else None
            if not header:
                self._in_fallback_summary = False
        elif fm and self._fallback is not None:
            self._fallback.frames.append(Frame(fm.group(1), fm.group(2), int(fm.group(3))))
        return out


def _int(body: str) -> int | None:
    try:
        return int(body.split(":", 1)[1])
    except ValueError:
        return None
