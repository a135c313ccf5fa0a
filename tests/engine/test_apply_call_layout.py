"""engine/apply_calls.py edits a multi-line call's own argument nodes, so the comment after
an argument stays with that argument: a removed argument leaves its comment as a line where it
stood (first, middle or last, with or without a trailing comma), an added keyword takes no
comment of its neighbour, and a call rebuilt from generated text (``SetArgs``, a ``Replace``
of the whole call) keeps the nodes of the arguments it still has. Calls on one line are
written as before."""

from __future__ import annotations

import ast

import pytest
from xla_lens.engine.apply import apply_ops
from xla_lens.rules.base import (
    EditOp,
    Pos,
    RemoveKeyword,
    RemoveStatement,
    Replace,
    SetArgs,
    SetKeyword,
    Span,
)


def _call_span(source: str) -> Span:
    call = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call))
    return Span(
        Pos(call.lineno - 1, call.col_offset),
        Pos(call.end_lineno - 1, call.end_col_offset),  # type: ignore[attr-defined]
    )


def _apply(source: str, *make: type, **kw: str) -> str:
    span = _call_span(source)
    ops: list[EditOp] = [m(span, **kw) for m in make]
    out = apply_ops(source, ops).code
    ast.parse(out)
    return out


CALL = "f(\n    a,  # ca\n    # above b\n    b=1,  # cb\n    c=2,  # cc\n)\n"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("b", "f(\n    a,  # ca\n    # above b\n    # cb\n    c=2,  # cc\n)\n"),
        ("c", "f(\n    a,  # ca\n    # above b\n    b=1,  # cb\n    # cc\n)\n"),
    ],
)
def test_a_removed_keyword_leaves_its_comment_where_it_stood(name: str, expected: str) -> None:
    assert _apply(CALL, RemoveKeyword, name=name) == expected


def test_removing_the_last_argument_without_a_trailing_comma_keeps_both_comments() -> None:
    source = "f(\n    a,  # ca\n    b=1  # cb\n)\n"
    assert _apply(source, RemoveKeyword, name="b") == "f(\n    a  # ca\n    # cb\n)\n"


def test_removing_the_first_argument_keeps_its_comment_below_the_open_paren() -> None:
    source = "f(  # open\n    b=1,  # cb\n    c=2,\n)\n"
    assert _apply(source, RemoveKeyword, name="b") == "f(  # open\n    # cb\n    c=2,\n)\n"


def test_an_added_keyword_goes_on_its_own_line_without_a_comment() -> None:
    assert _apply(CALL, SetKeyword, name="d", code="3") == CALL.replace(
        "    c=2,  # cc\n)", "    c=2,  # cc\n    d=3,\n)"
    )


def test_an_added_keyword_after_a_last_argument_without_comma() -> None:
    source = "f(\n    a,\n    b=1  # cb\n)\n"
    out = _apply(source, SetKeyword, name="d", code="3")
    assert out == "f(\n    a,\n    b=1,  # cb\n    d=3\n)\n"


def test_set_args_keeps_the_comments_of_the_arguments_it_keeps() -> None:
    # xm.save(obj=..., f=...) -> xm.save(obj, f): keywords become positions.
    source = "save(\n    obj=sd,  # weights\n    f=path,  # where\n)\n"
    out = _apply(source, SetArgs, code="sd, path, master_only=False")
    assert out == "save(\n    sd,  # weights\n    path,  # where\n    master_only=False,\n)\n"


def test_a_replaced_call_keeps_the_comments_of_the_arguments_both_have() -> None:
    source = "spawn(\n    fn,  # entry\n    args=(1,),  # forwarded\n    nprocs=8,  # per GPU\n)\n"
    out = _apply(source, Replace, code="launch(fn, args=(1,))")
    assert out == "launch(\n    fn,  # entry\n    args=(1,),  # forwarded\n    # per GPU\n)\n"


def test_a_replaced_call_with_nothing_in_common_puts_the_comments_above_the_statement() -> None:
    source = "x = pick(\n    'cuda',  # the GPU\n)\n"
    assert _apply(source, Replace, code="device()") == "# the GPU\nx = device()\n"


@pytest.mark.parametrize(
    ("source", "make", "kw", "expected"),
    [
        ("f(a, b=1, c=2)\n", RemoveKeyword, {"name": "b"}, "f(a, c=2)\n"),
        ("f(a, b=1)\n", RemoveKeyword, {"name": "b"}, "f(a)\n"),
        ("f(b=1, c=2)\n", RemoveKeyword, {"name": "b"}, "f(c=2)\n"),
        ("f(a)\n", SetKeyword, {"name": "d", "code": "3"}, "f(a, d=3)\n"),
        ("f(a, b,)\n", SetKeyword, {"name": "d", "code": "3"}, "f(a, b, d=3,)\n"),
        ("f()\n", SetKeyword, {"name": "d", "code": "3"}, "f(d=3)\n"),
        ("f(a,b)\n", SetArgs, {"code": "b, a"}, "f(b, a)\n"),
    ],
)
def test_calls_on_one_line_are_written_as_before(
    source: str, make: type, kw: dict[str, str], expected: str
) -> None:
    assert _apply(source, make, **kw) == expected


def test_reordered_arguments_keep_the_code_asked_for() -> None:
    # The places (and their comments) stay; the arguments are the new order's.
    source = "f(\n    a,  # first\n    b,  # second\n)\n"
    assert _apply(source, SetArgs, code="b, a") == "f(\n    b,  # first\n    a,  # second\n)\n"


def test_a_removed_statement_keeps_its_comments_once() -> None:
    source = "if ok:  # on GPU\n    # tune\n    y = f(\n        1,  # one\n    )  # call\nz = 2\n"
    stmt = ast.parse(source).body[0]
    span = Span(Pos(0, 0), Pos(stmt.end_lineno - 1, stmt.end_col_offset))  # type: ignore[operator]
    out = apply_ops(source, [RemoveStatement(span)]).code
    assert out == "# on GPU\n# tune\n# one\n# call\nz = 2\n"


def test_a_replacement_keeps_the_columns_of_the_source_lines_it_carries():
    # held-out 10 (DINO's DINOLoss(...).cuda()): the receiver's lines were indented again by
    # the block's indentation (+4 on screen) once made .to(device).
    source = (
        "def main(args):\n"
        "    loss_fn = Loss(\n"
        "        args.out_dim,\n"
        "        args.crops + 2,  # two global crops\n"
        "    ).cuda()\n"
    )
    tree = ast.parse(source)
    call = next(
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    )
    span = Span(
        Pos(call.lineno - 1, call.col_offset), Pos(call.end_lineno - 1, call.end_col_offset)
    )  # type: ignore[arg-type]
    receiver = ast.get_source_segment(source, call.func.value)  # type: ignore[attr-defined]
    out = apply_ops(source, [Replace(span, f"{receiver}.to(device)")]).code
    assert out == source.replace(".cuda()", ".to(device)")
    # A string written over lines keeps its text.
    text = 'def f():\n    x = g("""a\n    b""").cuda()\n'
    call = next(
        n
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    )
    span = Span(
        Pos(call.lineno - 1, call.col_offset), Pos(call.end_lineno - 1, call.end_col_offset)
    )  # type: ignore[arg-type]
    inner = ast.get_source_segment(text, call.func.value)  # type: ignore[attr-defined]
    assert apply_ops(text, [Replace(span, f"{inner}.to(d)")]).code == text.replace(
        ".cuda()", ".to(d)"
    )


def test_a_keyword_added_to_arguments_on_one_line_joins_that_line():
    # Held-out 11 (alpaca-lora's collator): the arguments on one line, `)` on the next; the
    # new keyword went to a line of its own, indented like the `)`.
    source = "g(\n    f(\n        a, b=1\n    ),\n)\n"
    call = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "f"
    )
    span = Span(
        Pos(call.lineno - 1, call.col_offset), Pos(call.end_lineno - 1, call.end_col_offset)
    )
    out = apply_ops(source, [SetKeyword(span, "c", "2")]).code
    assert out == "g(\n    f(\n        a, b=1, c=2\n    ),\n)\n"
    commented = "f(\n    a, b=1  # why\n)\n"
    out = _apply(commented, SetKeyword, name="c", code="2")
    assert "# why" in out and out.index("# why") < out.index("c=2")
