"""Incremental parsing gives exactly the tree (and the findings) of a full parse.

Random edit sequences (seeded) over scripts with decorators, multi-line strings, comments,
tabs, non-ASCII text and \\r\\n / \\r line ends, with edits that type inside a line, add and
remove lines, open unterminated strings and brackets, and cross statements. Every time the
incremental parser answers, its tree must dump (positions included) like ``ast.parse``'s,
and it must answer often enough that the fast path is what is being tested.
"""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
from xla_lens.engine.analysis import analyze
from xla_lens.engine.incremental import ParsedText, reparse

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

BASE = '''\
# -*- coding: utf-8 -*-
"""Module docstring
spanning lines."""
import torch
import torch.nn as nn

DEVICE = torch.device("cuda")  # the device
NAME = "naïve – 漢字 😀"


@torch.no_grad()
@staticmethod
def evaluate(model, loader):
    total = 0
    for x, y in loader:
        x = x.to(DEVICE)
        total += (model(x).argmax(1) == y.cuda()).sum().item()
    text = """inside
    a string: def g(): pass
"""
    return total


class Net(nn.Module):
\tdef __init__(self):
\t\tsuper().__init__()
\t\tself.fc = nn.Linear(4, 2)

\tdef forward(self, x):
\t\treturn self.fc(x)

# a comment between statements

values = [
    1,
    2,  # inside brackets
]
a = 1; b = 2
if a:
    b = 3
else:
    b = 4
x = a \\
    + b
model = Net().cuda()
'''

SNIPPETS = [
    "",
    "x",
    " ",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "    ",
    "(",
    ")",
    "]",
    ":",
    ";",
    "\\\n",
    "'",
    '"',
    '"""',
    "é",
    "😀",
    "漢",
    "# edited\n",
    "# c",
    "y = 2\n",
    "z = torch.zeros(3).cuda()\n",
    "def f():\n    return 1\n",
    "@dec\n",
    "if x:\n",
    "else:\n",
    "    pass\n",
    "\f",
    "\x00",
    "from __future__ import annotations\n",
    "return 5",
    "torch.device('cuda')",
]


def _full(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _dump(tree: ast.Module) -> str:
    return ast.dump(tree, include_attributes=True)


def _random_edit(rng: random.Random, text: str) -> str:
    kind = rng.random()
    if kind < 0.5 and "\n" in text:
        # Typing inside one line: the common keystroke.
        lines = text.splitlines(keepends=True)
        row = rng.randrange(len(lines))
        offset = sum(len(line) for line in lines[:row])
        col = rng.randrange(len(lines[row]) + 1)
        at = offset + col
        end = at + (rng.randrange(3) if rng.random() < 0.3 else 0)
        end = min(end, offset + len(lines[row].rstrip("\r\n")))
        return text[:at] + rng.choice(SNIPPETS) + text[max(end, at) :]
    # Anywhere, any length: may cross statements or remove whole lines.
    at = rng.randrange(len(text) + 1)
    end = min(len(text), at + rng.choice([0, 0, 1, 2, 5, 20, 80]))
    return text[:at] + rng.choice(SNIPPETS) + text[end:]


def _variants() -> list[str]:
    crlf = BASE.replace("\n", "\r\n")
    lone_cr = BASE.replace("\n", "\r")
    return [BASE, crlf, lone_cr, BASE.rstrip("\n")]


@pytest.mark.parametrize("seed", range(12))
def test_random_edits_give_the_tree_of_a_full_parse(seed: int) -> None:
    rng = random.Random(seed)
    base = _variants()[seed % 4]
    previous = ParsedText(base, ast.parse(base))
    text = base
    answered = parsed = 0
    steps = 300
    for _ in range(steps):
        text = _random_edit(rng, text)
        full = _full(text)
        spliced = reparse(previous, text)
        if spliced is not None:
            answered += 1
            assert full is not None, f"spliced a tree for a text that does not parse: {text!r}"
            assert _dump(spliced) == _dump(full), text
        if full is not None:
            parsed += 1
            previous = ParsedText(text, spliced if spliced is not None else full)
        elif rng.random() < 0.7:  # mostly back to a text that parses, as typing gets there
            text = previous.text
    assert answered >= parsed // 3, f"the fast path answered {answered} of {parsed} parses"


def test_an_edit_inside_a_statement_reparses_and_keeps_the_others() -> None:
    previous = ParsedText(BASE, ast.parse(BASE))
    text = BASE.replace("total = 0", "total = 10")
    tree = reparse(previous, text)
    assert tree is not None and _dump(tree) == _dump(ast.parse(text))
    # Statements the edit left alone are the previous tree's own nodes.
    assert tree.body[0] is previous.tree.body[0]
    assert tree.body[-1] is previous.tree.body[-1]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a = 1; b = 2\n", "a = 1; b = 3\n"),  # statements share a line
        ("x = 1\ny = 2\n", "x = 1 \\\ny = 2\n"),  # the edit continues a line into the next
        ("x = 1\ny = (2)\n", "x = 1\ny = (2\n"),  # an unclosed bracket: the full parse says
        ('x = 1\ny = "a"\n', 'x = 1\ny = """a"\n'),  # an unterminated string
        ("x = 1\ny = 2\n", "\nx = 1y = 2\n"),  # the region no longer ends a line
        ("x = 1 \\\n\ny = 2\n", "x = 1 \\\n+ 3\ny = 2\n"),  # a backslash joins it
    ],
)
def test_no_splice_where_it_is_not_certain(old: str, new: str) -> None:
    assert reparse(ParsedText(old, ast.parse(old)), new) is None


@pytest.mark.parametrize(
    "source",
    [
        "x = 1\nfrom __future__ import annotations\n",  # placement is the compiler's check
        "return 1\n",
        "break\n",
        "await x\n",
        "nonlocal x\n",
        "# coding: no-such-codec\nx = 1\n",
    ],
)
def test_ast_parse_runs_no_context_checks(source: str) -> None:
    # The splice relies on statements parsing alone as they do in the file.
    ast.parse(source)


def _findings(source: str, previous=None) -> list[tuple]:
    result = analyze(source, "train.py", previous=previous)
    return [
        (
            f.code,
            f.span,
            f.message,
            int(f.severity),
            f.fix is not None and f.fix.safe,
            f.fix.review_reason if f.fix else None,
            repr(tuple(f.fix.ops)) if f.fix else None,
        )
        for f in result.findings
    ]


@pytest.mark.parametrize("sample", ["mnist_cuda.py", "mnist_amp.py", "ddp_cuda.py"])
def test_incremental_analysis_finds_what_a_fresh_one_finds(sample: str) -> None:
    rng = random.Random(sample)
    text = (SAMPLES / sample).read_text()
    previous = analyze(text, "train.py").model
    assert previous is not None
    for _ in range(12):
        lines = text.splitlines(keepends=True)
        row = rng.randrange(len(lines))
        choice = rng.random()
        if choice < 0.4:
            lines.insert(row, rng.choice(["# edited\n", "y = torch.zeros(2).cuda()\n", "\n"]))
        elif choice < 0.7:
            body = lines[row].rstrip("\r\n")
            lines[row] = body + rng.choice(["  # note", " ", ""]) + lines[row][len(body) :]
        else:
            lines[row] = lines[row].replace("cuda", "cpu", 1)
        text = "".join(lines)
        incremental = analyze(text, "train.py", previous=previous)
        assert _findings(text, previous) == _findings(text)
        if incremental.model is not None:
            previous = incremental.model


def test_a_line_count_change_in_a_long_file_reparses_the_tail_in_slices() -> None:
    # 3,000 lines: the tail after an edit that adds a line is parsed 500 lines at a time
    # (``REPARSE_SLICE_LINES``); the tree must still be a full parse's, positions included.
    functions = [
        f"def step_{i}(x):\n    y = x * {i}  # ü\n    if y:\n        return [y,\n            {i}]\n    return y\n\n"
        for i in range(430)
    ]
    old = "import torch\n\n" + "".join(functions)
    assert old.count("\n") > 3000
    at = old.index("def step_5(")
    new = old[:at] + "# a new comment line\n" + old[at:]
    tree = reparse(ParsedText(old, ast.parse(old)), new)
    assert tree is not None
    assert ast.dump(tree, include_attributes=True) == ast.dump(
        ast.parse(new), include_attributes=True
    )
