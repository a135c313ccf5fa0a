"""An ``if`` whose only statements the fixes removed is removed too (with its ``elif`` and
``else`` blocks when they were all emptied), when its tests only read (``if args.cuda:
torch.backends.cudnn.benchmark = True``): no ``if args.cuda: pass`` left behind. The comments
of what was removed stay."""

import ast

import pytest
from xla_lens.engine import fix_source
from xla_lens.engine.apply import apply_ops
from xla_lens.rules.base import Pos, RemoveStatement, Span


def _removing(source: str, *lines: int) -> str:
    tree = ast.parse(source)
    ops = [
        RemoveStatement(
            Span(
                Pos(n.lineno - 1, n.col_offset),
                Pos(n.end_lineno - 1, n.end_col_offset),  # type: ignore[attr-defined]
            )
        )
        for n in ast.walk(tree)
        if isinstance(n, ast.stmt) and n.lineno in lines and not isinstance(n, ast.If)
    ]
    result = apply_ops(source, ops)
    assert result.applied == len(ops)
    return result.code


def test_an_emptied_if_with_a_reading_test_goes_and_its_comments_stay():
    source = (
        "x = 1\n"
        "if args.cuda and not args.slow:  # speed\n"
        "    # tune the kernels\n"
        "    torch.backends.cudnn.benchmark = True  # faster convs\n"
        "y = 2\n"
    )
    out = _removing(source, 4)
    assert "if args.cuda" not in out and "pass" not in out
    assert "# speed\n" in out and "# tune the kernels\n" in out and "# faster convs\n" in out
    assert out.startswith("x = 1\n") and out.endswith("y = 2\n")
    ast.parse(out)


@pytest.mark.parametrize(
    "header",
    [
        "if check_cuda():",  # a call may do more than decide
        "if (n := len(xs)) > 1:",
    ],
)
def test_an_emptied_if_whose_test_does_something_keeps_a_pass(header):
    source = f"{header}\n    torch.backends.cudnn.benchmark = True\ny = 2\n"
    out = _removing(source, 2)
    assert out == f"{header}\n    pass\ny = 2\n"


def test_an_emptied_if_with_an_else_keeps_a_pass():
    source = "if args.cuda:\n    torch.cuda.empty_cache()\nelse:\n    print('cpu')\n"
    out = _removing(source, 2)
    assert out == "if args.cuda:\n    pass\nelse:\n    print('cpu')\n"


def test_the_users_own_pass_is_left_alone():
    source = "if args.cuda:\n    pass\nx = 1\ny = 2\n"
    assert _removing(source, 3) == "if args.cuda:\n    pass\ny = 2\n"


def test_convert_drops_the_flag_guarded_cudnn_settings_and_stays_a_fixpoint():
    source = (
        "import argparse\nimport torch\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--cuda', action='store_true')\n"
        "args = parser.parse_args()\n"
        "if args.cuda:\n"
        "    torch.backends.cudnn.benchmark = True  # faster convs\n"
        "device = torch.device('cuda' if args.cuda else 'cpu')\n"
        "model = torch.nn.Linear(4, 2).to(device)\n"
    )
    once = fix_source(source, "s.py", target="modern")
    assert once.error is None
    assert "if args.cuda:" not in once.source and "# faster convs\n" in once.source
    twice = fix_source(once.source, "s.py", target="modern")
    assert twice.source == once.source


def test_an_if_with_every_branch_emptied_goes_whole():
    # SSL4MIS (held-out 128): cudnn flags in both branches of ``if not args.deterministic``.
    source = (
        "if not args.deterministic:\n"
        "    cudnn.benchmark = True\n"
        "# the slow, exact path\n"
        "else:\n"
        "    cudnn.benchmark = False  # exact\n"
        "seed = 1\n"
    )
    out = _removing(source, 2, 5)
    assert "if not" not in out and "else" not in out and "pass" not in out
    assert "# the slow, exact path\n" in out and "# exact\n" in out and out.endswith("seed = 1\n")
    elif_chain = (
        "if mode == 'a':\n    cudnn.benchmark = True\nelif mode == 'b':\n"
        "    cudnn.benchmark = False\nelse:\n    cudnn.enabled = False\n"
    )
    assert "if" not in _removing(elif_chain, 2, 4, 6)
    # One branch keeps a statement: the whole chain stays, emptied blocks as ``pass``.
    kept = _removing(elif_chain, 2, 4)
    assert kept.count("pass") == 2 and "cudnn.enabled = False" in kept
