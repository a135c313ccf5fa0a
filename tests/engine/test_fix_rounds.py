"""``fix_source``'s fallback when the combined edit of a round fails: the fixes that apply
together, and the outcome names only the fixes it really applied."""

from __future__ import annotations

import ast

from xla_lens.engine.fixing import _apply_one_by_one
from xla_lens.rules.base import Finding, Fix, Pos, RemoveStatement, Replace, Severity, Span


def _span(node: ast.AST) -> Span:
    return Span(
        Pos(node.lineno - 1, node.col_offset),
        Pos(node.end_lineno - 1, node.end_col_offset),  # type: ignore[attr-defined]
    )


def test_the_fallback_reports_the_one_fix_it_applied():
    source = "import torch\nvalue = grid[1, 2]\ntorch.cuda.synchronize()\n"
    tree = ast.parse(source)
    index = next(n for n in ast.walk(tree) if isinstance(n, ast.Tuple))
    sync = tree.body[2]
    # libcst has no node for ``grid[1, 2]``'s index tuple: this fix cannot apply.
    refused = Finding(
        "XLA998", "t", _span(index), Severity.WARNING, fix=Fix("x", (Replace(_span(index), "0"),))
    )
    removal = Finding(
        "XLA999", "t", _span(sync), Severity.WARNING, fix=Fix("y", (RemoveStatement(_span(sync)),))
    )
    text, applied = _apply_one_by_one(source, [refused, removal])
    assert text == "import torch\nvalue = grid[1, 2]\n"
    assert applied == [removal]
    assert _apply_one_by_one(source, [refused]) == (source, [])


def test_a_fix_inside_a_span_another_fix_rewrites_waits_for_the_next_round():
    from xla_lens.engine.fixing import fix_source, without_nested_fixes
    from xla_lens.rules.base import InsertAfter, ReplaceStatement

    source = "if __name__ == '__main__':\n    seed()\n    main()\n"
    tree = ast.parse(source)
    guard, seed = tree.body[0], tree.body[0].body[0]
    rebuild = Finding(
        "XLA204",
        "t",
        _span(guard.body[1]),
        Severity.WARNING,
        fix=Fix("launch", (ReplaceStatement(_span(guard), "launch()\n"),)),
    )
    inner = Finding(
        "XLA116",
        "t",
        _span(seed),
        Severity.WARNING,
        fix=Fix("seed", (InsertAfter(_span(seed), "seed_xla()"),)),
    )
    assert without_nested_fixes([inner, rebuild]) == [rebuild]
    # Real rules: XLA204 rebuilds the __main__ block around the seed XLA116 would extend;
    # the seed's fix is not claimed as applied unless its line is in the output.
    script = (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
        "def main(rank):\n"
        '    dist.init_process_group("nccl")\n'
        "    model = DDP(torch.nn.Linear(2, 2).to(rank), device_ids=[rank])\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for _ in range(3):\n"
        "        opt.zero_grad()\n"
        "        model(torch.ones(4, 2).to(rank)).sum().backward()\n"
        "        opt.step()\n\n\n"
        'if __name__ == "__main__":\n'
        "    torch.manual_seed(123)\n"
        '    main(int(os.environ.get("LOCAL_RANK", 0)))\n'
    )
    outcome = fix_source(script, "t.py", unsafe=True)
    assert "XLA204" in outcome.applied
    assert ("XLA116" in outcome.applied) == ("torch_xla.manual_seed" in outcome.source)


def test_the_fallback_keeps_every_fix_that_applies_with_the_others():
    # Held-out 62's CutMix: one failing edit made each round apply a single fix, and the
    # eighth round left a half-converted script (fix_source was not idempotent).
    source = "import torch\nvalue = grid[1, 2]\ntorch.cuda.synchronize()\nx = a.cuda()\n"
    tree = ast.parse(source)
    index = next(n for n in ast.walk(tree) if isinstance(n, ast.Tuple))
    sync = tree.body[2]
    call = tree.body[3].value
    refused = Finding(
        "XLA998", "t", _span(index), Severity.WARNING, fix=Fix("x", (Replace(_span(index), "0"),))
    )
    removal = Finding(
        "XLA999", "t", _span(sync), Severity.WARNING, fix=Fix("y", (RemoveStatement(_span(sync)),))
    )
    move = Finding(
        "XLA997", "t", _span(call), Severity.WARNING, fix=Fix("z", (Replace(_span(call), "a"),))
    )
    text, applied = _apply_one_by_one(source, [refused, removal, move])
    assert text == "import torch\nvalue = grid[1, 2]\nx = a\n"
    assert applied == [removal, move]
