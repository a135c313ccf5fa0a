"""A fix that replaces a compound statement with part of it (XLA405 drops
``with torch.cuda.device(i):`` and keeps its body) keeps every comment of the statement it
removes: the trailing comment of the ``with`` line, the comments above the body's first
statement, between its statements, in a nested block and after its last statement, dedented
with the body. The output parses and a second fix changes nothing."""

from __future__ import annotations

import ast

from xla_lens.engine import fix_source
from xla_lens.engine.apply import apply_ops
from xla_lens.rules.base import Pos, ReplaceStatement, Span

from tests.helpers import fixed

HEAD = "import torch\n\n\ndef run(x):\n"


def _unwrapped(body: str) -> str:
    return fixed(HEAD + body, "XLA405")


def test_a_comment_above_the_first_body_statement_is_kept():
    out = _unwrapped(
        "    with torch.cuda.device(-1):\n        # scale first\n        y = x * 2\n    return y\n"
    )
    assert out == HEAD + "    # scale first\n    y = x * 2\n    return y\n"


def test_the_trailing_comment_of_the_with_line_is_kept():
    out = _unwrapped(
        "    with torch.cuda.device(-1):  # no GPU here\n        y = x * 2\n    return y\n"
    )
    assert out == HEAD + "    # no GPU here\n    y = x * 2\n    return y\n"


def test_comments_between_body_statements_and_in_a_nested_block_are_kept():
    out = _unwrapped(
        "    with torch.cuda.device(-1):  # pick\n"
        "        # first\n"
        "        y = x * 2\n"
        "        # then\n"
        "        if y.sum() > 0:\n"
        "            # nested\n"
        "            y = y + 1  # bump\n"
        "            # end of if\n"
        "        z = y  # last\n"
        "        # after the last\n"
        "    return z\n"
    )
    assert out == HEAD + (
        "    # pick\n"
        "    # first\n"
        "    y = x * 2\n"
        "    # then\n"
        "    if y.sum() > 0:\n"
        "        # nested\n"
        "        y = y + 1  # bump\n"
        "        # end of if\n"
        "    z = y  # last\n"
        "    # after the last\n"
        "    return z\n"
    )


def test_a_body_ending_in_a_nested_block_keeps_the_comments_after_it():
    out = _unwrapped(
        "    with torch.cuda.device(-1):\n"
        "        for i in range(3):\n"
        "            x = x + i\n"
        "            # inner end\n"
        "        # outer end\n"
        "    return x\n"
    )
    assert out == HEAD + (
        "    for i in range(3):\n"
        "        x = x + i\n"
        "        # inner end\n"
        "    # outer end\n"
        "    return x\n"
    )


def test_a_with_at_the_end_of_the_file_keeps_its_last_comment():
    source = "import torch\n\nwith torch.cuda.device(-1):\n    # go\n    run()\n    # done\n"
    assert fixed(source, "XLA405") == "import torch\n\n# go\nrun()\n# done\n"


def test_crlf_and_non_ascii_comments():
    source = (
        "import torch\r\n\r\n"
        "def run(x):\r\n"
        "    with torch.cuda.device(-1):  # élan ✓\r\n"
        "        # größe\r\n"
        "        y = x * 2  # 倍\r\n"
        "        # fin ✓\r\n"
        "    return y\r\n"
    )
    out = fix_source(source, accept=lambda f: f.code == "XLA405")
    assert out.error is None
    assert out.source == (
        "import torch\r\n\r\n"
        "def run(x):\r\n"
        "    # élan ✓\r\n"
        "    # größe\r\n"
        "    y = x * 2  # 倍\r\n"
        "    # fin ✓\r\n"
        "    return y\r\n"
    )
    ast.parse(out.source)
    again = fix_source(out.source, accept=lambda f: f.code == "XLA405")
    assert again.source == out.source


def test_a_one_line_with_keeps_its_comment():
    source = "import torch\n\nwith torch.cuda.device(-1): run()  # once\nrest()\n"
    assert fixed(source, "XLA405") == "import torch\n\n# once\nrun()\nrest()\n"


def _with_span(source: str) -> Span:
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.With))
    return Span(
        Pos(node.lineno - 1, node.col_offset),
        Pos(node.end_lineno - 1, node.end_col_offset),  # type: ignore[attr-defined]
    )


def test_the_engine_does_not_repeat_a_comment_the_replacement_already_has():
    source = "with ctx():  # a\n    # b\n    run()  # c\n    # d\nrest()\n"
    code = "# b\nrun()  # c\n# d\n"
    result = apply_ops(source, [ReplaceStatement(_with_span(source), code)])
    assert result.code == "# a\n# b\nrun()  # c\n# d\nrest()\n"


def test_comments_inside_a_replaced_expression_are_kept_above_it():
    source = "with ctx(\n    1,  # one\n):\n    run()\n"
    result = apply_ops(source, [ReplaceStatement(_with_span(source), "run()")])
    assert result.code == "# one\nrun()\n"


def test_a_replaced_line_keeps_its_trailing_comment():
    source = "# lead\nx = a.item()  # log\ny = 1\n"
    span = Span(Pos(1, 0), Pos(1, 12))
    two = apply_ops(source, [ReplaceStatement(span, "x = b\nz = 2")])
    assert two.code == "# lead\nx = b  # log\nz = 2\ny = 1\n"
    block = apply_ops(source, [ReplaceStatement(span, "if b:\n    x = b")])
    assert block.code == "# lead\n# log\nif b:\n    x = b\ny = 1\n"


def test_comments_a_rule_already_joined_onto_its_replacement_are_not_repeated():
    # XLA101's picker fix carries the if/else's comments as one trailing comment.
    code = (
        "import torch\n\n"
        "if torch.cuda.is_available():  # pick the device\n"
        '    device = torch.device("cuda")  # the GPU\n'
        "else:\n"
        '    device = torch.device("cpu")  # fallback\n'
        "x = torch.ones(2).to(device)\n"
    )
    out = fixed(code, "XLA101")
    assert "device = torch_xla.device()  # pick the device  # the GPU  # fallback\n" in out
    for comment in ("# pick the device", "# the GPU", "# fallback"):
        assert out.count(comment) == 1, out
