"""engine/apply.py matches each edit's ``ast`` span to a libcst node. The two disagree on
tuples written with parentheses (``ast``'s span covers the innermost pair, libcst's node
excludes them) and on a generator that is a call's only argument (``ast`` takes the call's
parentheses). Such an edit must land on the node the rule meant, or the whole fix is refused
as not applicable: never dropped while the rest of its edits are applied, never put on
another node."""

import ast

import pytest
from xla_lens.engine.apply import FixError, apply_ops
from xla_lens.engine.fixing import apply_fix
from xla_lens.rules.base import Finding, Fix, Pos, RemoveStatement, Replace, Severity, Span


def _span(node: ast.AST) -> Span:
    return Span(
        Pos(node.lineno - 1, node.col_offset),
        Pos(node.end_lineno - 1, node.end_col_offset),  # type: ignore[attr-defined]
    )


def _first(source: str, kind: type, nth: int = 0) -> ast.AST:
    return [n for n in ast.walk(ast.parse(source)) if isinstance(n, kind)][nth]


def _replace_first(source: str, kind: type, code: str, nth: int = 0) -> str:
    result = apply_ops(source, [Replace(_span(_first(source, kind, nth)), code)])
    assert result.applied == 1 and not result.dropped
    return result.code


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("shape = (batch, seq)\n", "shape = NEW\n"),
        ("shape = ((batch, seq))\n", "shape = (NEW)\n"),
        ("for (x, y) in pairs:\n    pass\n", "for NEW in pairs:\n    pass\n"),
        ("key = lambda row: (row.a, row.b)\n", "key = lambda row: NEW\n"),
        ("empty = ()\n", "empty = NEW\n"),
        ("one = (1,)\n", "one = NEW\n"),
        ("pad = (left\n       , right)\n", "pad = NEW\n"),
        ("first = (a, b)[0]\n", "first = NEW[0]\n"),
    ],
)
def test_a_parenthesised_tuple_is_replaced_with_its_parentheses(source, expected):
    assert _replace_first(source, ast.Tuple, "NEW") == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a, b = x, y\n", "NEW = x, y\n"),
        ("def f():\n    return x, y  # both\n", "def f():\n    return NEW  # both\n"),
        ("for i in x, y:\n    pass\n", "for i in NEW:\n    pass\n"),
        ("one = 1,\n", "one = NEW\n"),
    ],
)
def test_a_bare_tuple_is_replaced(source, expected):
    assert _replace_first(source, ast.Tuple, "NEW") == expected


def test_the_right_tuple_of_several_is_replaced():
    source = "pairs = [(a, b), (c, d)]\n"
    assert _replace_first(source, ast.Tuple, "NEW", nth=0) == "pairs = [NEW, (c, d)]\n"
    assert _replace_first(source, ast.Tuple, "NEW", nth=1) == "pairs = [(a, b), NEW]\n"


def test_a_bare_tuple_replacing_a_parenthesised_one_keeps_its_parentheses():
    # ``print((a, b))`` -> ``print(c, d)`` would pass two arguments instead of one tuple.
    assert _replace_first("print((a, b))\n", ast.Tuple, "c, d") == "print((c, d))\n"
    assert _replace_first("t = ((a, b))\n", ast.Tuple, "c, d") == "t = (c, d)\n"
    assert _replace_first("t = (a, b) + x\n", ast.Tuple, "c, d") == "t = (c, d) + x\n"
    assert _replace_first("t = (a, b)\n", ast.Tuple, "(c, d)") == "t = (c, d)\n"


def test_a_generator_that_is_the_only_argument_is_replaced():
    source = "total = sum(x * x for x in xs)\n"
    assert _replace_first(source, ast.GeneratorExp, "[0]") == "total = sum([0])\n"
    assert _replace_first(source, ast.GeneratorExp, "y for y in ys") == (
        "total = sum(y for y in ys)\n"
    )
    source = "total = sum((x for x in xs), 0)\n"
    assert _replace_first(source, ast.GeneratorExp, "ys") == "total = sum(ys, 0)\n"


def test_a_starred_element_is_replaced_without_a_crash():
    source = "row = *head, tail\n"
    assert _replace_first(source, ast.Starred, "first") == "row = first, tail\n"


def test_an_edit_that_matches_no_node_is_refused_not_dropped():
    # ``grid[1, 2]``: libcst has no node for the index tuple.
    source = "value = grid[1, 2]\nprint(value)\n"
    index = _span(_first(source, ast.Tuple))
    with pytest.raises(FixError, match="not applicable"):
        apply_ops(source, [Replace(index, "0")])


def test_a_fix_with_one_unmatched_edit_is_not_applied_in_part():
    source = "import torch\nvalue = grid[1, 2]\ntorch.cuda.synchronize()\n"
    sync = _first(source, ast.Expr)
    ops = (RemoveStatement(_span(sync)), Replace(_span(_first(source, ast.Tuple)), "0"))
    finding = Finding("XLA999", "test", _span(sync), Severity.WARNING, fix=Fix("two edits", ops))
    with pytest.raises(FixError, match="not applicable"):
        apply_fix(source, finding)


def test_an_edit_anchored_between_nodes_is_refused():
    source = "shape = (batch, seq)\n"
    # ``(batch``: the tuple's opening parenthesis and first element, no node in either tree.
    with pytest.raises(FixError, match="not applicable"):
        apply_ops(source, [Replace(Span(Pos(0, 8), Pos(0, 14)), "NEW")])


@pytest.mark.parametrize(
    ("source", "target", "code", "expected"),
    [
        # The condition's first branch: unparenthesised, the new conditional would take the
        # old condition as its own else branch.
        (
            'kind = "cuda" if gpu else "cpu"\n',
            '"cuda"',
            '"xla" if xla else "cpu"',
            'kind = ("xla" if xla else "cpu") if gpu else "cpu"\n',
        ),
        # The else branch chains as written.
        (
            'kind = "cuda" if gpu else "cpu"\n',
            '"cpu"',
            '"xla" if xla else "cpu"',
            'kind = "cuda" if gpu else "xla" if xla else "cpu"\n',
        ),
        (
            'kind = "cuda"\n',
            '"cuda"',
            '"xla" if xla else "cpu"',
            'kind = "xla" if xla else "cpu"\n',
        ),
        ("steps = n * k\n", "n", "a + b", "steps = (a + b) * k\n"),
        ("steps = n + k\n", "n", "a * b", "steps = a * b + k\n"),
        ("ok = n < k\n", "k", "a < b", "ok = n < (a < b)\n"),
        ("sq = x ** 2\n", "x", "-y", "sq = (-y) ** 2\n"),
        ("show(x)\n", "x", "a, b", "show((a, b))\n"),
        ("run(flag)\n", "flag", "a and b", "run(a and b)\n"),
    ],
)
def test_a_replacement_keeps_binding_to_its_place(source, target, code, expected):
    node = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.expr) and ast.get_source_segment(source, n) == target
    )
    assert apply_ops(source, [Replace(_span(node), code)]).code == expected


def test_a_comparison_under_not_keeps_its_parentheses():
    # ``not a > 1`` means ``not (a > 1)`` but reads as ``(not a) > 1``: written as meant.
    source = "single = not flag\n"
    flag = _first(source, ast.Name, 1)
    assert _replace_first(source, ast.Name, "xr.world_size() > 1", nth=1) == (
        "single = not (xr.world_size() > 1)\n"
    )
    assert flag.id == "flag"
