"""``assert torch.cuda.is_available()``: on an XLA host (TPU, Trainium, PJRT CPU) there is no
CUDA, so the assert stops the converted script with an AssertionError wherever it runs.

llm.c puts one at the top of its DDP branch (``if ddp: assert torch.cuda.is_available();
init_process_group('nccl')``): the conversion turns that branch's backend to "xla", and the
converted DDP path still died on the assert with nothing saying so.

Removing the statement is meaning-preserving: an assert either passes, doing nothing, or raises.
On every host where the original ran it passed (that is what it asserted), so those runs are
unchanged; only the runs it stopped — the XLA host the conversion is for — go on. Python's ``-O``
drops asserts altogether, so no program may rely on one for anything but stopping. The exception
is an assert inside a ``try`` whose handler catches the AssertionError: there it is control flow
(``try: assert cuda; use_cuda = True except AssertionError: use_cuda = False``), and removing it
changes which branch runs, so that removal is for review.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ...semantic.model import ScriptModel
from ..base import Finding, Fix, RemoveStatement, Severity
from .cuda_gates import is_availability_call, why_false_on_xla

# Handlers that catch an AssertionError (a bare ``except:`` too).
CATCHING = ("AssertionError", "Exception", "BaseException")


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for v in test.values for c in _conjuncts(v)]
    return [test]


def _catching_try(model: ScriptModel, node: ast.stmt) -> ast.Try | None:
    """The ``try`` whose body holds ``node`` and one of whose handlers catches its error."""
    child: ast.AST = node
    for a in model.ancestors(node):
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return None
        if isinstance(a, ast.Try | ast.TryStar) and child in a.body:
            for handler in a.handlers:
                caught = model.segment(handler.type) if handler.type is not None else ""
                if handler.type is None or any(name in caught for name in CATCHING):
                    return a  # type: ignore[return-value]
        child = a
    return None


def cuda_availability_asserts(
    model: ScriptModel, code: str, never_runs_on_xla: Callable[[ast.AST], bool]
) -> Iterator[Finding]:
    """One finding per ``assert`` whose test needs CUDA (``torch.cuda.is_available()``, alone
    or ``and``-ed with other conditions), unless it sits where an XLA host never goes
    (``never_runs_on_xla``: inside ``if torch.cuda.is_available():``)."""
    for node in model.nodes_of(ast.Assert):
        assert isinstance(node, ast.Assert)
        parts = _conjuncts(node.test)
        cuda = [p for p in parts if is_availability_call(model, p)]
        if not cuda or never_runs_on_xla(node):
            continue
        message = (
            f"`assert {model.segment(node.test)}` fails on an XLA host ("
            f"{why_false_on_xla(model, cuda[0])}): the converted script stops here with an "
            "AssertionError"
        )
        rest = [p for p in parts if not is_availability_call(model, p)]
        if rest:
            kept = " and ".join(model.segment(p) for p in rest)
            yield Finding(
                code,
                message,
                model.span(node),
                Severity.WARNING,
                manual=f"Drop the {model.segment(cuda[0])} check and keep the other "
                f"conditions: assert {kept}",
            )
            continue
        handler = _catching_try(model, node)
        reason = (
            f"the try at line {handler.lineno} catches its AssertionError: the assert chooses "
            "a branch there, and without it the try's body always runs"
            if handler is not None
            else ""
        )
        if reason:
            message = f"{message} (fix needs review: {reason})"
        yield Finding(
            code,
            message,
            model.span(node),
            Severity.WARNING,
            fix=Fix(
                "Remove the CUDA availability assert",
                (RemoveStatement(model.span(node)),),
                safe=not reason,
                review_reason=reason,
            ),
        )
