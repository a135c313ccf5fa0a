"""Hypothesis strategies: the samples, edited the way real files get edited (and mangled).

``wild_sources`` may produce anything (half-typed lines, unbalanced brackets, NULs, lone
surrogates, stray BOMs); ``valid_sources`` only edits that keep the script parseable, so the
fix properties have findings to work on. Both end with a line-ending style (LF, CRLF or
mixed), optionally tab indentation, and optionally a BOM.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SAMPLE_TEXTS: dict[str, str] = {
    p.name: p.read_text(encoding="utf-8") for p in sorted(SAMPLES.glob("*.py"))
}
BOM = "\ufeff"

# derandomize: CI and every helper's machine draw the same examples, so a failure
# reproduces; no database, so a failure found elsewhere never leaks into this run.
# XLA_LENS_ROBUSTNESS_EXAMPLES=500 digs deeper locally; CI keeps the quick default.
ROBUST = settings(
    max_examples=int(os.environ.get("XLA_LENS_ROBUSTNESS_EXAMPLES", "25")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# What people paste into training scripts, valid on its own at statement level.
SNIPPETS = [
    'device = torch.device("cuda")',
    'model = model.to("cuda:0")',
    "x = x.cuda(non_blocking=True)",
    "torch.cuda.set_device(local_rank)",
    "scaler = torch.cuda.amp.GradScaler()",
    "with torch.cuda.amp.autocast():\n    loss = loss_fn(model(x), y)",
    'dist.init_process_group("nccl")',
    "for batch in loader:\n    loss = model(batch).sum()\n    loss.backward()\n"
    "    optimizer.step()\n    print(loss.item())",
    "while True:\n    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()",
    "import torch_xla.core.xla_model as xm",
    "from torch.cuda import amp",
    "if torch.cuda.is_available():\n    torch.cuda.synchronize()",
    "loader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)",
    "def step(batch):\n    loss = model(batch).mean()\n    loss.backward()\n    return loss",
    "pass",
    "# just a comment",
    '"""a stray docstring"""',
    "x = torch.randn(4, 4).cuda()  # xla-lens: ignore",
    "y = torch.zeros(3, device='cuda')  # xla-lens: ignore[XLA101]",
    "lambda: torch.device('cuda')",
    "z = [t.cuda() for t in tensors]",
]

# Characters that break naive position arithmetic: non-BMP (two UTF-16 units, four UTF-8
# bytes), combining marks, right-to-left text, zero-width and BOM characters in the middle,
# and the characters str.splitlines treats as line breaks while Python does not.
SPECIAL_CHARS = [
    "😀",
    "🔥",
    "👩\u200d💻",
    "𝔘",
    "𐍈",
    "e\u0301",
    "ü",
    "ß",
    "שלום",
    "中文",
    "\u200b",
    BOM,
    "\u2028",
    "\u2029",
    "\x85",
    "\x0c",
    "\x0b",
    "\x1c",
    "\t",
]
# Never line breaks, quotes or backslashes: for text placed inside comments and strings.
_INLINE_ALPHABET = st.one_of(
    st.sampled_from(SPECIAL_CHARS),
    st.characters(
        blacklist_categories=("Cs", "Cc"),
        blacklist_characters="\"'\\\r\n",
    ),
)
# Lists joined, not st.text: some "characters" above are clusters of several code points.
inline_text = st.lists(_INLINE_ALPHABET, min_size=1, max_size=12).map("".join)
wild_text = st.lists(
    st.one_of(
        st.sampled_from([*SPECIAL_CHARS, "(", ")", "[", "]", "{", "}", '"', "'", "\\", ":"]),
        st.characters(),  # anything, lone surrogates and NUL included
    ),
    min_size=1,
    max_size=20,
).map("".join)


@dataclass(frozen=True)
class Edited:
    """An edited sample and how it was made (shown by hypothesis when a test fails)."""

    name: str
    text: str
    steps: tuple[str, ...]

    def __repr__(self) -> str:  # the text itself is what a failing example needs
        return f"Edited({self.name!r}, steps={self.steps!r}, text={self.text!r})"


def _indent(code: str, indent: str) -> list[str]:
    return [indent + line + "\n" for line in code.split("\n")]


def _statement_starts(text: str) -> list[tuple[int, int, int]]:
    """(first line, last line, column) of every statement alone on its lines, 0-based:
    the places where whole statements can go in or out without breaking the syntax."""
    tree = ast.parse(text)
    lines = text.split("\n")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.end_lineno is not None:
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            line = lines[first - 1]
            col = node.col_offset
            if first != node.lineno:
                col = len(line) - len(line.lstrip())
            if (
                line[:col].strip()
                or lines[node.end_lineno - 1][node.end_col_offset :]
                .strip(" \t")
                .split("#")[0]
                .strip()
            ):
                continue  # shares a line with another statement (`a = 1; b = 2`, `if x: y`)
            out.append((first - 1, node.end_lineno - 1, col))
    return sorted(out)


@st.composite
def _line_endings(draw: st.DrawFn, text: str) -> tuple[str, str]:
    style = draw(st.sampled_from(["lf", "crlf", "mixed", "cr"]))
    if style == "lf":
        return text, style
    lines = text.split("\n")
    if style == "crlf":
        return "\r\n".join(lines), style
    if style == "cr":
        return "\r".join(lines), style
    ends = draw(st.lists(st.sampled_from(["\n", "\r\n"]), min_size=len(lines), max_size=len(lines)))
    return "".join(line + end for line, end in zip(lines[:-1], ends, strict=False)) + lines[
        -1
    ], style


def _tabs(text: str) -> str:
    # Four leading spaces -> one tab, everywhere (the samples indent by multiples of four).
    return re.sub(r"(?m)^(?: {4})+", lambda m: "\t" * (len(m.group(0)) // 4), text)


@st.composite
def valid_sources(draw: st.DrawFn) -> Edited:
    name = draw(st.sampled_from(sorted(SAMPLE_TEXTS)))
    text = SAMPLE_TEXTS[name]
    steps: list[str] = []
    for _ in range(draw(st.integers(0, 3))):
        starts = _statement_starts(text)
        first, last, col = draw(st.sampled_from(starts))
        lines = text.split("\n")
        indent = lines[first][:col]
        kind = draw(st.sampled_from(["insert", "replace-with-pass", "comment", "string"]))
        if kind == "insert":
            code = draw(st.sampled_from(SNIPPETS))
            new = [*lines[:first], *[s.rstrip("\n") for s in _indent(code, indent)], *lines[first:]]
        elif kind == "replace-with-pass":
            new = [*lines[:first], indent + "pass", *lines[last + 1 :]]
        elif kind == "comment":
            new = list(lines)
            new[last] = new[last] + "  # " + draw(inline_text)
        else:
            # Non-ASCII text before a finding on the same line moves its code-point column
            # away from its UTF-8 byte column.
            new = list(lines)
            new[first] = indent + f'_u = "{draw(inline_text)}"; ' + lines[first][col:]
        candidate = "\n".join(new)
        try:
            ast.parse(candidate)
        except (SyntaxError, ValueError):
            continue  # e.g. a `;` joined onto a compound statement: try the next edit
        text = candidate
        steps.append(f"{kind}@{first}")
    if draw(st.booleans()):
        text = _tabs(text)
        steps.append("tabs")
    text, style = draw(_line_endings(text))
    steps.append(style)
    if draw(st.booleans()):
        text = BOM + text
        steps.append("bom")
    return Edited(name, text, tuple(steps))


@st.composite
def wild_sources(draw: st.DrawFn) -> Edited:
    name = draw(st.sampled_from(sorted(SAMPLE_TEXTS)))
    lines = SAMPLE_TEXTS[name].split("\n")
    steps: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(
            st.sampled_from(["insert", "delete", "truncate", "bracket", "unicode", "snippet"])
        )
        at = draw(st.integers(0, max(len(lines) - 1, 0)))
        if kind == "insert":
            lines.insert(at, draw(wild_text))
        elif kind == "snippet":
            indent = draw(st.sampled_from(["", "    ", "        ", "\t", "  "]))
            code = draw(st.sampled_from(SNIPPETS))
            lines[at:at] = [s.rstrip("\n") for s in _indent(code, indent)]
        elif kind == "delete" and lines:
            end = draw(st.integers(at, min(at + 15, len(lines))))
            del lines[at:end]
        elif kind == "truncate" and lines:
            line = lines[at]
            lines[at] = line[: draw(st.integers(0, len(line)))]
        elif kind == "bracket" and lines:
            line = lines[at]
            pos = draw(st.integers(0, len(line)))
            lines[at] = line[:pos] + draw(st.sampled_from("([{)]}\"'")) + line[pos:]
        elif kind == "unicode" and lines:
            line = lines[at]
            pos = draw(st.integers(0, len(line)))
            lines[at] = line[:pos] + draw(wild_text) + line[pos:]
        steps.append(f"{kind}@{at}")
    text = "\n".join(lines)
    if draw(st.booleans()):
        text = _tabs(text)
        steps.append("tabs")
    text, style = draw(_line_endings(text))
    steps.append(style)
    if draw(st.booleans()):
        text = BOM + text
        steps.append("bom")
    return Edited(name, text, tuple(steps))
