"""Availability gates that stop a script without CUDA: ``if not torch.cuda.is_available():
sys.exit("needs a GPU")``, the same through a flag (``has_gpu = torch.accelerator.
is_available()``) or through a helper (``if not verify_min_gpu_count(2): sys.exit()`` where the
helper returns ``torch.accelerator.is_available() and count >= n``).

Both ``torch.cuda.is_available()`` and ``torch.accelerator.is_available()`` are False on an XLA
host (no CUDA there, and torch.accelerator knows no XLA device), so such a gate stops the
converted script before it trains, with nothing else left to report.

Removing ``if not <available>: <stop>`` is meaning-preserving by the argument the CUDA assert's
removal rests on (cuda_asserts.py): on every host where the original went past the gate the test
was False and the block did nothing, so those runs are unchanged; only the runs it stopped (the
XLA host the conversion is for) go on. That holds only when the test is the availability answer
alone (``not avail() or n < 2`` also stops a one-GPU host, which the removal would let through),
the block always stops (ends in ``raise``/``sys.exit()``), has no ``else``, and no ``try`` around
it can catch the stop. A helper's answer gets no fix: other callers may use it, and its device
count has no XLA answer before the launcher starts.

A fallback (``if not torch.cuda.is_available(): print("using CPU")``) stops nothing and is not
reported here: that is a device choice, not a requirement.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ..base import Finding, Fix, RemoveStatement, Severity

AVAILABILITY = frozenset({"torch.cuda.is_available", "torch.accelerator.is_available"})
CUDA_BUILD = "torch.version.cuda"
STOP_CALLS = frozenset({"sys.exit", "os._exit", "os.abort"})
BUILTIN_STOPS = frozenset({"exit", "quit"})
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def is_availability_call(model: ScriptModel, node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and model.call_name(node) in AVAILABILITY
        and not node.args
        and not node.keywords
    )


def is_cuda_build_test(model: ScriptModel, node: ast.AST) -> bool:
    """``torch.version.cuda``: the CUDA version PyTorch was built with, None in a build without
    CUDA (held-out 145's InstructLLaMA: ``if not torch.version.cuda: raise RuntimeError``)."""
    return isinstance(node, ast.Attribute) and model.qualname(node) == CUDA_BUILD


def why_false_on_xla(model: ScriptModel, call: ast.expr) -> str:
    """Why the availability answer is False on an XLA host."""
    if is_cuda_build_test(model, call):
        return (
            "PyTorch's CPU wheel, which TPU and Trainium set-ups install beside torch_xla, is "
            "built without CUDA"
        )
    if model.call_name(call) == "torch.accelerator.is_available":
        return "torch.accelerator knows no XLA device"
    return "an XLA host has no CUDA"


def _stops(model: ScriptModel, stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Raise):
        return True
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    if isinstance(func, ast.Name) and func.id in BUILTIN_STOPS:
        return func.id not in model.imports and func.id not in model.functions
    return model.call_name(stmt.value) in STOP_CALLS


def _scope(model: ScriptModel, node: ast.AST) -> ast.AST:
    for a in model.ancestors(node):
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return a
    return model.tree


def _single_binding(model: ScriptModel, scope: ast.AST, name: str) -> ast.expr | None:
    """The value of the one binding of ``name`` in ``scope`` (nested functions excluded)."""
    values: list[ast.expr | None] = []
    for n in model.walk_scope(scope):
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, ast.AnnAssign | ast.AugAssign | ast.NamedExpr | ast.For | ast.AsyncFor):
            targets = [n.target]
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            targets = [n.optional_vars]
        else:
            continue
        for t in targets:
            if any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(t)):
                plain = isinstance(n, ast.Assign | ast.AnnAssign | ast.NamedExpr)
                values.append(n.value if plain else None)
    return values[0] if len(values) == 1 else None


def _answer(model: ScriptModel, node: ast.expr, scope: ast.AST) -> ast.expr | None:
    """The availability call ``node`` is: the call, or a name bound once to it; or
    ``torch.version.cuda`` itself."""
    if is_availability_call(model, node) or is_cuda_build_test(model, node):
        return node
    if isinstance(node, ast.Name):
        value = _single_binding(model, scope, node.id)
        if value is not None and is_availability_call(model, value):
            return value  # type: ignore[return-value]
    return None


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for v in test.values for c in _conjuncts(v)]
    return [test]


def _helper_answer(model: ScriptModel, call: ast.Call) -> ast.Call | None:
    """``verify_min_gpu_count(2)`` of this file whose returned value needs the availability
    answer: ``return has_gpu and count >= n`` with ``has_gpu = torch.accelerator...()``."""
    if not isinstance(call.func, ast.Name):
        return None
    fn = model.steps.module_functions.get(call.func.id)
    if fn is None:
        return None
    for ret in (n for n in model.walk_scope(fn) if isinstance(n, ast.Return)):
        for part in _conjuncts(ret.value) if ret.value is not None else []:
            found = _answer(model, part, fn)
            if found is not None:
                return found
    return None


def _enclosing_try(model: ScriptModel, node: ast.stmt) -> ast.Try | None:
    child: ast.AST = node
    for a in model.ancestors(node):
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return None
        if isinstance(a, ast.Try | ast.TryStar) and child in a.body and a.handlers:
            return a  # type: ignore[return-value]
        child = a
    return None


def _negated(test: ast.expr) -> list[ast.expr]:
    """What ``test`` asks to be False to stop: ``not X`` -> [X]; ``not X or Y`` -> [X, ...]."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return [test.operand]
    if _is_none_test(test):  # ``torch.version.cuda is None``
        return [test.left]  # type: ignore[attr-defined]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return [n for v in test.values for n in _negated(v)]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        # ``if args.cuda and not torch.cuda.is_available(): raise`` (held-out 81's matting
        # trainer): with the flag the converted script needs, it stops there.
        return [n for v in test.values for n in _negated(v)]
    return []


def _is_none_test(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def stop_gates(
    model: ScriptModel, code: str, never_runs_on_xla: Callable[[ast.AST], bool]
) -> Iterator[Finding]:
    for gate in model.nodes_of(ast.If):
        assert isinstance(gate, ast.If)
        if never_runs_on_xla(gate):
            continue
        found = _else_stop(model, code, gate)
        if found is not None:
            yield found
            continue
        if not gate.body or not _stops(model, gate.body[-1]):
            continue
        scope = _scope(model, gate)
        test = model.segment(gate.test)
        for asked in _negated(gate.test):
            parts = _conjuncts(asked)
            answer = next((a for a in (_answer(model, p, scope) for p in parts) if a), None)
            if answer is not None:
                alone = (isinstance(gate.test, ast.UnaryOp) or _is_none_test(gate.test)) and len(
                    parts
                ) == 1
                yield _gate_finding(model, code, gate, answer, alone)
                break
            helper = parts[0] if len(parts) == 1 and isinstance(parts[0], ast.Call) else None
            answer = _helper_answer(model, helper) if helper is not None else None
            if answer is not None:
                yield Finding(
                    code,
                    f"`{model.segment(answer)}` is False on an XLA host ("
                    f"{why_false_on_xla(model, answer)}): {model.segment(helper.func)}() then "
                    f"answers False and `if {test[:60]}:` "
                    f"(line {line_ref(gate.lineno)}) stops the script before it trains",
                    model.span(answer),
                    Severity.WARNING,
                    manual=f"Drop the GPU requirement at line {line_ref(gate.lineno)}: the XLA launcher "
                    "starts one process per XLA device (count them inside a replica with "
                    "xr.world_size(), never before the launch).",
                )
                break


def _else_stop(model: ScriptModel, code: str, gate: ast.If) -> Finding | None:
    """``elif torch.cuda.is_available(): <single-process set-up> else: sys.exit(1)`` (DINO's
    init_distributed_mode, held-out 10 r1): on an XLA host the test is False and the ``else``
    stops the script. Advice only: which branch an XLA run should take is the script's call."""
    orelse = gate.orelse
    if not orelse or (len(orelse) == 1 and isinstance(orelse[0], ast.If)):
        return None  # no else, or an elif chain (its own If is judged on its own)
    if not _stops(model, orelse[-1]):
        return None
    scope = _scope(model, gate)
    parts = _conjuncts(gate.test)
    answer = next((a for a in (_answer(model, p, scope) for p in parts) if a), None)
    if answer is None:
        return None
    keyword = "elif" if _is_elif(model, gate) else "if"
    return Finding(
        code,
        f"`{keyword} {model.segment(gate.test)[:60]}:` (line {line_ref(gate.lineno)}) is False on an XLA "
        f"host ({why_false_on_xla(model, answer)}), so its else branch (line "
        f"{orelse[0].lineno}) stops the converted script before it trains",
        model.span(answer),
        Severity.WARNING,
        manual=(
            f"Let an XLA run take the branch at line {line_ref(gate.lineno)}: drop the availability test "
            "there (or test for the XLA device instead); the XLA launcher starts one process "
            "per device, and xr.world_size() / xr.global_ordinal() give the ranks inside one."
        ),
    )


def _is_elif(model: ScriptModel, gate: ast.If) -> bool:
    parent = model.parent(gate)
    return isinstance(parent, ast.If) and parent.orelse == [gate]


def _gate_finding(
    model: ScriptModel, code: str, gate: ast.If, answer: ast.expr, alone: bool
) -> Finding:
    test = model.segment(gate.test)
    build = is_cuda_build_test(model, answer)
    message = (
        f"`if {test}:` stops the script when `{model.segment(answer)}` is "
        f"{'None' if build else 'False'}, as it is on an XLA host "
        f"({why_false_on_xla(model, answer)}): the converted script would stop here"
    )
    parent = model.parent(gate)
    if isinstance(gate.test, ast.BoolOp) and isinstance(gate.test.op, ast.And):
        # ``if args.cuda and not torch.cuda.is_available(): raise``: the other conditions
        # choose when the requirement applies; kept alone they would stop every such run.
        others = " and ".join(
            model.segment(v)
            for v in gate.test.values
            if not (isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not))
        )
        return Finding(
            code,
            f"{message} whenever `{others or test}` holds",
            model.span(gate.test),
            Severity.WARNING,
            manual="Drop this requirement by hand (the whole `if`, not only the availability "
            "test: the conditions left would stop every run that asks for the device), or test "
            "for the XLA device instead.",
        )
    if not alone or gate.orelse or (isinstance(parent, ast.If) and gate in parent.orelse):
        what = (
            "the test asks more than the availability (a one-GPU host would pass without it)"
            if not alone
            else "the gate has an else branch or is an elif, which a removal would take along"
        )
        return Finding(
            code,
            message,
            model.span(gate.test),
            Severity.WARNING,
            manual=f"Drop the availability check by hand ({what}); keep the other conditions.",
        )
    handler = _enclosing_try(model, gate)
    reason = (
        f"the try at line {line_ref(handler.lineno)} may catch the stop: the gate may choose a branch "
        "there, and without it the try's body always goes on"
        if handler is not None
        else ""
    )
    if reason:
        message = f"{message} (fix needs review: {reason})"
    return Finding(
        code,
        message,
        model.span(gate.test),
        Severity.WARNING,
        fix=Fix(
            "Remove the CUDA-build gate" if build else "Remove the availability gate",
            (RemoveStatement(model.span(gate)),),
            safe=not reason,
            review_reason=reason,
        ),
    )
