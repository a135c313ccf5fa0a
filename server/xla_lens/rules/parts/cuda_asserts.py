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

Nor is the removal safe while the script still needs CUDA after the assert (vits: ``assert
torch.cuda.is_available(); n_gpus = torch.cuda.device_count(); mp.spawn(run, nprocs=n_gpus)``).
Without the assert, ``device_count()`` answers 0 on the XLA host and ``mp.spawn(nprocs=0)``
returns at once: the script exits 0 having trained nothing, where the original stopped with the
assert's message. A later use that raises there (``torch.cuda.current_device()``, ``.cuda()``)
trades the clear stop for a driver error. Such a removal is for review, naming the line; fix-all
re-analyses after each round, so once the other fixes have converted those uses it is safe.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ...semantic.cuda_queries import RAISE_ON_XLA, ZERO_ON_XLA
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ...semantic.node_helpers import method_name
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


# As a statement of their own XLA403 removes these itself (in the same round as the assert).
REMOVED_AS_STATEMENTS = {
    "torch.cuda.set_device",
    "torch.accelerator.set_device_index",
    "torch.accelerator.set_device_idx",
}
SPAWNS = {"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"}


def _spawned_with(model: ScriptModel, count: ast.Call) -> ast.Call | None:
    """The ``mp.spawn(..., nprocs=n)`` whose process count is ``count`` or the name that is
    assigned it (``n = torch.cuda.device_count()``)."""
    stmt = model.enclosing_statement(count)
    name = (
        stmt.targets[0].id
        if isinstance(stmt, ast.Assign)
        and stmt.value is count
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        else None
    )
    for call in model.calls:
        if model.call_name(call) not in SPAWNS:
            continue
        nprocs = next((k.value for k in call.keywords if k.arg == "nprocs"), None)
        if nprocs is None and len(call.args) > 2:
            nprocs = call.args[2]
        if nprocs is count or (isinstance(nprocs, ast.Name) and nprocs.id == name):
            return call
    return None


def _needs_cuda(model: ScriptModel, call: ast.Call) -> str | None:
    """What ``call`` does on an XLA host when it needs CUDA there (None: it does not)."""
    q = model.call_name(call)
    if q in ZERO_ON_XLA:
        spawn = _spawned_with(model, call)
        if spawn is not None:
            return (
                f"{q}() is 0 on an XLA host; {model.segment(spawn.func)}(nprocs=0) would start "
                "no process and the script would exit having run nothing"
            )
        return f"{q}() is 0 on an XLA host: what the script sets from it goes wrong silently"
    if q in RAISE_ON_XLA:
        stmt = model.enclosing_statement(call)
        if q in REMOVED_AS_STATEMENTS and isinstance(stmt, ast.Expr) and stmt.value is call:
            return None
        return f"{q}() raises on an XLA host (no CUDA driver)"
    if q is None and isinstance(call.func, ast.Attribute) and method_name(call) == "cuda":
        return ".cuda() raises on an XLA host (no CUDA driver) until it is converted"
    return None


def cuda_uses_after(
    model: ScriptModel, node: ast.stmt, never_runs_on_xla: Callable[[ast.AST], bool]
) -> str:
    """Why removing ``node`` (a CUDA requirement: an assert or a stop gate) would not keep the
    script's meaning: a CUDA use that may run after it, or "" when there is none. Uses before
    it in the same function ran on the original too; a use in another function may be called
    later, wherever it is written; one under ``if torch.cuda.is_available():`` never runs."""
    scope = model.enclosing_function(node)
    uses = []
    for call in model.calls:
        if model.enclosing_function(call) is scope and call.lineno < node.lineno:
            continue
        if never_runs_on_xla(call):
            continue
        why = _needs_cuda(model, call)
        if why is not None:
            uses.append((call.lineno, why))
    if not uses:
        return ""
    uses.sort()
    line, why = uses[0]
    more = f" (and {len(uses) - 1} more CUDA uses after it)" if len(uses) > 1 else ""
    return f"line {line_ref(line)}: {why}{more}; keep the requirement until that use is converted"


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
        # ``torch.cuda.device_count() >= 1`` is False on an XLA host too (held-out 80's
        # po2_quantization): such conditions go with the availability check.
        queries = [p for p in rest if _queries_cuda(model, p)]
        kept_parts = [p for p in rest if p not in queries]
        if queries:
            dropped = ", ".join(f"`{model.segment(p)}`" for p in queries)
            kept = " and ".join(model.segment(p) for p in kept_parts)
            yield Finding(
                code,
                message,
                model.span(node),
                Severity.WARNING,
                manual=f"Drop the {model.segment(cuda[0])} check and {dropped} too (CUDA device "
                "queries: counts are 0 on an XLA host, the others raise); "
                + (f"keep the other conditions: assert {kept}" if kept else "drop the assert")
                + ", or count XLA devices with torch_xla.device_count() if the script needs one",
            )
            continue
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
            f"the try at line {line_ref(handler.lineno)} catches its AssertionError: the assert chooses "
            "a branch there, and without it the try's body always runs"
            if handler is not None
            else cuda_uses_after(model, node, never_runs_on_xla)
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


def _queries_cuda(model: ScriptModel, expr: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and model.call_name(n) in ZERO_ON_XLA | RAISE_ON_XLA
        for n in ast.walk(expr)
    )
