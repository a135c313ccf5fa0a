"""Parses torch_xla's graph dump into graphs of nodes (pure: text in, graphs out).

Input is torch_xla's graph dump (``XLA_SAVE_TENSORS_FILE`` with ``XLA_SAVE_TENSORS_FMT=hlo``,
``XLA_IR_DEBUG=1``, ``XLA_HLO_DEBUG=1``), format verified on torch_xla 2.9.0::

    [ScheduleSyncTensorsGraph]
    TensorsGraphInfo:
      sync (/.../torch_xla/torch_xla.py:87)          <- Python frames, innermost first
      <module> (/home/me/train.py:14)
    Root Hashes: (...)
    ## BEGIN_GRAPH
    HloModule IrToHlo.27, ...
    ENTRY %IrToHlo.27 (...) -> (...) {
      %p1.3 = f32[8,12]{1,0} parameter(1), metadata={op_type="xla__device_data" ...
              source_file="/home/me/train.py" source_line=11}
      ...
    }
    Graph Hash: 71eb4982e59d0c175c5196e7514c54ad
    ## END_GRAPH

The HLO form is used rather than ``XLA_SAVE_TENSORS_FMT=text``: the text IR prints neither
constant values nor op attributes (a slice's bounds), so a baked-in Python number would show as
two identical graphs with different hashes, and it names files by basename only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .events import Frame

_FRAME = re.compile(r"^(\S+) \((.+):(\d+)\)$")
_INSTR = re.compile(r"^\s*(ROOT )?%([\w.\-]+) = (.*)$")
_METADATA = re.compile(r",? ?metadata=\{([^}]*)\}")
_META_FIELD = re.compile(r'(\w+)=(?:"([^"]*)"|(\S+))')
_NAME_REF = re.compile(r"%([\w\-]+)\.\d+")
_OPERAND = re.compile(r"%([\w.\-]+)")
_LAYOUT = re.compile(r"\{[\d,]*\}")
# Ops whose operand text is a value or an index, not a list of operands.
_VALUE_OPS = ("constant", "parameter", "iota")


@dataclass
class Node:
    name: str
    opcode: str  # the HLO opcode: parameter, add, slice, ...
    shape: str  # without layout: f32[8,12]
    operands: list[str]  # names of the operand nodes
    value: str  # a constant's value; empty for other ops
    attrs: str  # attributes other than metadata, node ids stripped: slice={[0:8], [0:4]}
    op_type: str  # the torch op that made it: aten::addmm, xla::device_data; "" if unknown
    file: str | None  # the Python location of that op (innermost frame, may be a library)
    line: int | None

    @property
    def is_input(self) -> bool:
        return self.opcode == "parameter"

    def label(self) -> str:
        return self.op_type or self.opcode


@dataclass
class Graph:
    graph_hash: str
    frames: list[Frame]  # the Python frames of the sync, innermost first
    nodes: list[Node] = field(default_factory=list)


def parse_dump(text: str) -> list[Graph]:
    """Every synced graph of a dump, in the order they were synced. A graph synced again (a
    cached step, most of them) shares the nodes parsed the first time: its hash comes last in
    the block, so its instructions are kept as text until then."""
    graphs: list[Graph] = []
    parsed: dict[str, list[Node]] = {}
    frames: list[Frame] = []
    section = ""
    entry: list[str] = []
    graph_hash = ""
    depth = 0  # inside the ENTRY computation when 1
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("TensorsGraphInfo:"):
            section, frames = "frames", []
        elif line == "## BEGIN_GRAPH":
            section, entry, graph_hash, depth = "graph", [], "", 0
        elif line == "## END_GRAPH":
            if section == "graph" and graph_hash:
                if graph_hash not in parsed:
                    parsed[graph_hash] = [n for n in map(_parse_instruction, entry) if n]
                graphs.append(Graph(graph_hash, frames, parsed[graph_hash]))
            section = ""
        elif section == "frames":
            m = _FRAME.match(line.strip())
            if m:
                frames.append(Frame(m.group(1), m.group(2), int(m.group(3))))
        elif section == "graph":
            if line.startswith("Graph Hash:"):
                graph_hash = line.split(":", 1)[1].strip()
            elif line.startswith("ENTRY "):
                depth = 1
            elif depth and line.strip() == "}":
                depth = 0
            elif depth:
                entry.append(line)
    return graphs


def _parse_instruction(line: str) -> Node | None:
    m = _INSTR.match(line)
    if not m:
        return None
    name, rest = m.group(2), m.group(3)
    meta: dict[str, str] = {}
    mm = _METADATA.search(rest)
    if mm:
        for key, quoted, bare in _META_FIELD.findall(mm.group(1)):
            meta[key] = quoted or bare
        rest = rest[: mm.start()] + rest[mm.end() :]
    shape, rest = _split_shape(rest)
    opcode, _, rest = rest.partition("(")
    args, rest = split_parens(rest)
    value = args if opcode in _VALUE_OPS else ""
    operands = [] if opcode in _VALUE_OPS else _OPERAND.findall(args)
    attrs = _NAME_REF.sub(r"%\1", rest.strip().lstrip(",").strip())
    line_no = meta.get("source_line")
    return Node(
        name=name,
        opcode=opcode.strip(),
        shape=_LAYOUT.sub("", shape),
        operands=operands,
        value="" if opcode == "parameter" else value,
        attrs=attrs,
        op_type=meta.get("op_type", "").replace("__", "::"),
        file=meta.get("source_file"),
        line=int(line_no) if line_no and line_no.isdigit() else None,
    )


def _split_shape(rest: str) -> tuple[str, str]:
    if rest.startswith("("):  # a tuple shape holds spaces
        inner, after = split_parens(rest[1:])
        return f"({inner})", after.lstrip()
    shape, _, after = rest.partition(" ")
    return shape, after


def split_parens(text: str) -> tuple[str, str]:
    """``text`` starts just after an opening parenthesis: (inside, after the closing one)."""
    depth = 1
    for i, ch in enumerate(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth == 0:
                return text[:i], text[i + 1 :]
    return text, ""
