"""The availability test around a device move, rewritten with the move (XLA101, held-out 23).

    if torch.cuda.is_available():
        model = model.cuda()
        criterion = criterion.cuda()
        cudnn.benchmark = True

On an XLA host ``torch.cuda.is_available()`` is False, so a move rewritten to the XLA device
inside this block still never runs: the model stays on the CPU while the batches (moved outside
any guard) go to XLA, and the first step fails with "Expected XLA tensor" (SupContrast's
main_ce). Rewriting the move alone is not a conversion; the block must run on the XLA host, as
it ran on a CUDA host. So the move's (review) fix also drops the availability part of the test:
``True`` for a bare ``torch.cuda.is_available()``, ``not args.no_cuda`` for ``not args.no_cuda
and torch.cuda.is_available()`` (what a CUDA host computed).

Only when that is all the block needs: a block that calls CUDA otherwise
(``torch.cuda.set_device(gpu)``, ``torch.cuda.synchronize()``) would fail once it runs on the
XLA host, and a move in the ``else`` side, or under a test mixed another way, is left as it
was (its fix stays a review that names the guard). Pure analysis.
"""

from __future__ import annotations

import ast

from . import pickers
from .device_sites import bool_value
from .edits import Replace
from .model import ScriptModel, method_name
from .span import Span

# CUDA calls that run on a host without CUDA and answer as "no CUDA work" (seeding is lazy,
# the count is 0, an empty cache has nothing to free).
RUNS_WITHOUT_CUDA = frozenset(
    {
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "torch.cuda.device_count",
        "torch.cuda.is_available",
        "torch.cuda.empty_cache",
    }
)


def guard_rewrite(model: ScriptModel, fixed: Span) -> tuple[Replace, str] | None:
    """For a fix at ``fixed``: the edit that makes its innermost enclosing availability test
    true on the XLA host, and that test's new text; None when there is no such test or it
    cannot be rewritten so."""
    node = _innermost_guard(model, fixed)
    if node is None or not any(model.span(s).contains(fixed) for s in node.body):
        return None
    test = bool_value(node.test)
    if pickers.is_availability(model, test, follow=False):
        if not _is_positive(test):
            return None
        code = "True"
    else:
        flags = pickers.flag_part(model, node.test)
        if not isinstance(flags, list):
            return None
        code = " and ".join(model.segment(f) for f in flags)
    if any(_needs_cuda(model, s) for s in node.body):
        return None
    return Replace(model.span(node.test), code), code


def _innermost_guard(model: ScriptModel, fixed: Span) -> ast.If | None:
    best: ast.If | None = None
    for node in model.nodes_of(ast.If):
        assert isinstance(node, ast.If)
        if not model.span(node).contains(fixed):
            continue
        if not pickers.mentions_availability(model, node.test, follow=False):
            continue
        if best is None or model.span(node).start > model.span(best).start:
            best = node
    return best


def _is_positive(test: ast.AST) -> bool:
    """``torch.cuda.is_available()`` itself, not its negation or a comparison."""
    return isinstance(test, ast.Call)


def _needs_cuda(model: ScriptModel, stmt: ast.stmt) -> bool:
    """A call in the block that fails on a host without CUDA once the block runs there (its
    ``.cuda()`` moves and "cuda" strings are reported and fixed with it)."""
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call) and method_name(n) != "cuda":
            name = model.call_name(n) or ""
            if name.startswith(("torch.cuda.", "torch.accelerator.")):
                if name not in RUNS_WITHOUT_CUDA:
                    return True
    return False
