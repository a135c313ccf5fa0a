"""A file that does not parse is reported at the error, and an old PyTorch idiom that no longer
parses says how to fix it: ``targets.cuda(async=True)`` (torch 0.3; ``async`` is a keyword
since Python 3.7; held-out 127's speech-commands trainer)."""

from xla_lens.engine import analyze


def test_async_keyword_argument_is_explained():
    result = analyze("import torch\nx = torch.ones(2)\ny = x.cuda(async=True)\n")
    assert not result.ok
    problem = result.syntax_error
    assert problem.span.start.line == 2
    assert problem.message.startswith("syntax error: ")
    assert "rename it to `non_blocking=`" in problem.message


def test_other_syntax_errors_say_only_what_python_says():
    result = analyze("def f(:\n    pass\n")
    assert not result.ok
    assert "non_blocking" not in result.syntax_error.message
