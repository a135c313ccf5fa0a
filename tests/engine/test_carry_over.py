"""Findings carried over a comment-only edit are the findings a full analysis of the new
text gives (engine/carry_over.py).

Seeded random edit sequences over scripts with findings (the samples and conversion
fixtures, one with non-ASCII text, \\r\\n line ends and a BOM): comment lines entered and
deleted, comments typed at the end of code lines and inside strings, blank lines, comment
text changed, and code edits among them. Each carry is chained from the last one (as an
editor's keystrokes are) or from a full analysis when the last edit could not be carried;
whenever ``carry`` answers, its findings must equal ``analyze``'s field for field, and it
must answer often enough that the carrying is what is being tested.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from xla_lens.engine.analysis import analyze
from xla_lens.engine.carry_over import Carried, carried_from, carry
from xla_lens.rules.base import Finding

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = (
    sorted((ROOT / "samples").glob("*.py"))
    + sorted((ROOT / "tests" / "conversions" / "fixtures").glob("*.py"))[:12]
)

NON_ASCII = (
    "\ufeff# données – 漢字\r\n"
    "import torch\r\n"
    "\r\n"
    'device = torch.device("cuda")  # 😀 the GPU\r\n'
    "model = torch.nn.Linear(4, 2).to(device)\r\n"
    'note = """a string\r\n'
    "# not a comment: inside the string\r\n"
    '"""\r\n'
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\r\n"
    "scaler = torch.cuda.amp.GradScaler()\r\n"
    "for step in range(3):\r\n"
    "    x = torch.randn(8, 4).cuda()  # naïve\r\n"
    "    with torch.cuda.amp.autocast():\r\n"
    "        loss = model(x).sum()\r\n"
    "    scaler.scale(loss).backward()\r\n"
    "    scaler.step(opt)\r\n"
    "    scaler.update()\r\n"
    "    print(loss.item())\r\n"
)


def _facts(f: Finding) -> tuple:
    # ``marked`` too: a carried result is carried again, so its marked line references (what
    # the next carry renumbers) must be the full analysis's as well.
    fix = (
        (f.fix.title, f.fix.safe, f.fix.review_reason, f.fix.marked) if f.fix is not None else None
    )
    return (f.code, f.message, f.span, f.severity, f.manual, f.deprecated, f.related, fix, f.marked)


def _edit(rng: random.Random, text: str) -> str:
    nl = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(nl)
    at = rng.randrange(len(lines))
    kind = rng.random()
    indent = " " * rng.choice((0, 4, 8))
    if kind < 0.3:
        lines.insert(at, f"{indent}# note {rng.randrange(100)} é")
    elif kind < 0.55:
        if lines[at].strip():
            lines[at] += f"  # typed {rng.randrange(100)}"
    elif kind < 0.65:
        lines.insert(at, "")
    elif kind < 0.75:
        comments = [i for i, line in enumerate(lines) if line.lstrip().startswith("#")]
        if comments:
            del lines[rng.choice(comments)]
    elif kind < 0.85:
        comments = [i for i, line in enumerate(lines) if "#" in line]
        if comments:
            i = rng.choice(comments)
            lines[i] = lines[i].replace("#", "# x", 1)
    elif kind < 0.93:
        code = [i for i, line in enumerate(lines) if "lr=" in line or "range(" in line]
        if code:
            i = rng.choice(code)
            lines[i] = lines[i].replace("lr=", "lr=1+", 1).replace("range(", "range(1+", 1)
    else:
        lines[at] = lines[at] + " "  # trailing space (inside a string it is text)
    return nl.join(lines)


def _base(text: str) -> Carried:
    carried = carried_from(analyze(text))
    assert carried is not None
    return carried


@pytest.mark.parametrize("seed", range(3))
def test_carried_findings_are_those_of_a_full_analysis(seed: int) -> None:
    rng = random.Random(seed)
    texts = [p.read_text(encoding="utf-8") for p in SCRIPTS] + [NON_ASCII]
    carried_count = attempts = 0
    for text in rng.sample(texts, 6) + [NON_ASCII]:
        state = _base(text)
        for _ in range(8):
            text = _edit(rng, text)
            attempts += 1
            result = carry(state, text)
            full = analyze(text)
            if result is None:
                state = carried_from(full) or _base(text) if full.ok else state
                if not full.ok:
                    text = state.source
                continue
            carried_count += 1
            assert full.ok, "carried findings over an edit that broke the syntax"
            assert [_facts(f) for f in result.findings] == [_facts(f) for f in full.findings]
            state = result
    # The fast path must be what is tested: most of these edits only touch comments.
    assert carried_count >= attempts // 4, (carried_count, attempts)


def test_a_trailing_comment_is_carried_and_renumbers_nothing() -> None:
    text = NON_ASCII.replace("\ufeff", "")
    state = _base(text)
    lines = text.split("\r\n")
    lines[2] = "# a new comment"  # was blank
    result = carry(state, "\r\n".join(lines))
    assert result is not None
    assert [f.span for f in result.findings] == [f.span for f in state.findings]


def test_a_new_comment_line_moves_the_later_findings() -> None:
    text = "import torch\n\nx = torch.randn(2).cuda()\ny = torch.randn(2).cuda()\n"
    state = _base(text)
    result = carry(state, text.replace("\n\n", "\n# about x\n\n"))
    assert result is not None
    assert [f.span.start.line for f in result.findings] == [
        f.span.start.line + 1 for f in state.findings
    ]
    assert result.findings


# XLA107 names the line its sync goes before; XLA203 the process group's line.
NAMES_LINES = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

dist.init_process_group("nccl", world_size=2, rank=0)
model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randn(16, 2))
sampler = DistributedSampler(data)
for x, y in DataLoader(data, sampler=sampler):
    loss = ((model(x.cuda()) - y.cuda()) ** 2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    if loss.item() < 0.01:
        break
"""


def test_a_new_comment_line_renumbers_the_lines_messages_name() -> None:
    state = _base(NAMES_LINES)
    named = [f for f in state.findings if f.marked is not None]
    assert any("line 5" in f.message for f in named), [f.message for f in state.findings]
    new = NAMES_LINES.replace("import torch\n", "import torch\n# the model\n", 1)
    result = carry(state, new)
    assert result is not None
    assert [_facts(f) for f in result.findings] == [_facts(f) for f in analyze(new).findings]
    moved = [f for f in result.findings if f.marked is not None]
    assert any("line 6" in f.message for f in moved)
    assert not any("line 5" in f.message for f in moved)


def test_a_plain_number_that_may_name_a_moved_line_stops_the_carry() -> None:
    # A number written without line_ref (another file's line, a count) is not renumbered:
    # below it the carry cannot tell, so the rules run.
    from dataclasses import replace

    state = _base(NAMES_LINES)
    f = state.findings[0]
    odd = replace(state, findings=(replace(f, message=f"{f.message} (see line 9)"),))
    new = NAMES_LINES.replace("import torch\n", "import torch\n# the model\n", 1)
    assert carry(odd, new) is None
    below = NAMES_LINES + "# the end\n"
    assert carry(odd, below) is not None


@pytest.mark.parametrize(
    "old, new",
    [
        # Code changed: the rules must run.
        ("import torch\nx = torch.randn(2).cuda()\n", "import torch\nx = torch.randn(3).cuda()\n"),
        # A comment that silences a finding.
        (
            "import torch\nx = torch.randn(2).cuda()\n",
            "import torch\nx = torch.randn(2).cuda()  # xla-lens: ignore\n",
        ),
        # Typed on the line of a finding (its range may run to the line's end).
        (
            "import torch\nx = torch.randn(2).cuda()\n",
            "import torch\nx = torch.randn(2).cuda()  # c\n",
        ),
        # A '#' typed inside a string is text, not a comment.
        (
            'import torch\ns = """a\nb"""\nx = torch.randn(2).cuda()\n',
            'import torch\ns = """a # b\nb"""\nx = torch.randn(2).cuda()\n',
        ),
        # A comment line that opens a string when it loses its '#'.
        (
            "import torch\n# '''\nx = torch.randn(2).cuda()\n",
            "import torch\n'''\nx = torch.randn(2).cuda()\n",
        ),
    ],
)
def test_not_carried_where_a_rule_could_see_the_edit(old: str, new: str) -> None:
    assert carry(_base(old), new) is None
