"""XLA411: a collective that only one replica calls.

``xm.mesh_reduce``, ``xm.all_reduce``, ``xm.rendezvous``, ``dist.all_reduce``,
``dist.barrier``... return only when every replica has called them. Under ``if
xm.is_master_ordinal():`` (or ``if rank == 0:``) the master waits for replicas that never come:
the run hangs with more than one device, and works with one, so a single-device test never shows
it (held-out 140's TPU language-model trainer reduced its validation loss with
``xm.mesh_reduce`` inside ``if is_master_process:``).

Not reported where the same function calls the same collective outside that branch too (the
master-first idiom: ``if rank != 0: barrier()`` ... ``if rank == 0: barrier()`` pairs up), or
where the call names a process group (a subgroup may hold that one replica alone).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ..semantic.line_refs import line_ref
from ..semantic.model import SCOPE_TYPES, ScriptModel
from .base import Category, Finding, Rule, RuleContext, Severity

CODE = "XLA411"
XM = "torch_xla.core.xla_model."
DIST = "torch.distributed."
COLLECTIVES = frozenset(
    {
        XM + n
        for n in (
            "mesh_reduce",
            "all_reduce",
            "all_gather",
            "reduce_scatter",
            "rendezvous",
            "all_to_all",
            "collective_permute",
        )
    }
    | {
        DIST + n
        for n in (
            "all_reduce",
            "all_gather",
            "all_gather_object",
            "all_gather_into_tensor",
            "broadcast",
            "broadcast_object_list",
            "reduce",
            "barrier",
            "monitored_barrier",
            "all_to_all",
            "reduce_scatter",
            "gather",
            "gather_object",
            "scatter",
            "scatter_object_list",
        )
    }
)
MASTER_CALLS = frozenset({XM + "is_master_ordinal"})
# ``rank``, ``local_rank``, ``args.global_rank``, ``get_rank()``, ``xr.global_ordinal()``:
# not ``ranked`` or ``rankings``.
RANK_WORD = re.compile(
    r"^((local|global|node|proc|process)_)?(rank|ordinal)(_id|_idx|_index)?$"
    r"|^get_((local|global)_)?(rank|ordinal)$|^global_ordinal$|^process_index$",
    re.IGNORECASE,
)
# ``is_master``, ``is_main_process``, ``master_process``: not ``main`` or ``root`` alone (an
# option named ``--root`` is a folder).
MASTER_NAME = re.compile(
    r"^is_(master|main|chief|root|rank_?0|rank_?zero)(_process|_proc|_rank|_worker|_node)?$"
    r"|^(master|main)_(process|proc|rank|worker)$|^master$",
    re.IGNORECASE,
)


def _mentions_rank(model: ScriptModel, node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and RANK_WORD.match(n.id):
            return True
        if isinstance(n, ast.Attribute) and RANK_WORD.match(n.attr):
            return True
    return False


def _one_replica(model: ScriptModel, test: ast.expr, depth: int = 0) -> bool | None:
    """True: the test holds on one replica only (the master); False: on every replica but
    that one (``not is_master``, ``rank != 0``); None: neither is known."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _one_replica(model, test.operand, depth)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        parts = [_one_replica(model, v, depth) for v in test.values]
        if isinstance(test.op, ast.And) and True in parts:
            return True  # ``rank == 0 and step % 100 == 0``
        if isinstance(test.op, ast.Or) and parts and all(p is True for p in parts):
            return True
        return None
    if isinstance(test, ast.Call) and model.call_name(test) in MASTER_CALLS:
        return True
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq | ast.NotEq)
    ):
        sides = (test.left, test.comparators[0])
        zero = any(
            isinstance(s, ast.Constant) and s.value == 0 and s.value is not False for s in sides
        )
        if zero and any(_mentions_rank(model, s) for s in sides):
            return isinstance(test.ops[0], ast.Eq)
        return None
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.In | ast.NotIn)
        and isinstance(test.comparators[0], ast.List | ast.Tuple | ast.Set)
        and _mentions_rank(model, test.left)
    ):
        # ``args.local_rank in [-1, 0]``: rank 0, or no distributed run at all.
        values = {e.value for e in test.comparators[0].elts if isinstance(e, ast.Constant)}
        if values and values <= {-1, 0} and 0 in values:
            return isinstance(test.ops[0], ast.In)
        return None
    name = (
        test.id
        if isinstance(test, ast.Name)
        else test.attr
        if isinstance(test, ast.Attribute)
        else None
    )
    if name is None:
        return None
    if isinstance(test, ast.Name) and depth < 2:
        values = model.assigned_from(name)
        answers = {_one_replica(model, v, depth + 1) for v in values}
        if values and len(answers) == 1:
            return answers.pop()
    return True if MASTER_NAME.match(name) else None


def _guard(model: ScriptModel, call: ast.Call) -> ast.If | None:
    """The ``if`` of the same function whose branch holding ``call`` only the master runs."""
    child: ast.AST = call
    for a in model.ancestors(call):
        if isinstance(a, SCOPE_TYPES):
            return None
        if isinstance(a, ast.If):
            one = _one_replica(model, a.test)
            in_body = any(s is child for s in a.body)
            in_else = any(s is child for s in a.orelse)
            if (one is True and in_body) or (one is False and in_else):
                return a
        child = a
    return None


def _called_elsewhere(model: ScriptModel, call: ast.Call, guard: ast.If, name: str) -> bool:
    scope = model.enclosing_function(call) or model.tree
    # The other branch counts: ``if rank == 0: broadcast(x) else: broadcast(y)`` pairs up.
    branch = guard.body if any(n is call for s in guard.body for n in ast.walk(s)) else guard.orelse
    inside = {id(n) for s in branch for n in ast.walk(s)}
    return any(
        isinstance(n, ast.Call)
        and n is not call
        and id(n) not in inside
        and model.call_name(n) == name
        for n in model.walk_scope(scope)
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.calls_to(*COLLECTIVES):
        if any(k.arg == "group" for k in call.keywords) or any(
            k.arg == "groups" for k in call.keywords
        ):
            continue
        guard = _guard(model, call)
        if guard is None:
            continue
        name = model.call_name(call) or ""
        if _called_elsewhere(model, call, guard, name):
            continue
        test = model.segment(guard.test)
        test = test if len(test) <= 50 else test[:47] + "..."
        branch = (
            f"`if {test}:`"
            if any(n is call for s in guard.body for n in ast.walk(s))
            else f"the `else:` of `if {test}:`"
        )
        shown = name.rpartition(".")[2]
        yield Finding(
            CODE,
            f"{shown}() is a collective: it returns only when every replica has called it, but "
            f"only the master reaches it here ({branch}, line {line_ref(guard.lineno)}): with "
            "more than one replica the run hangs",
            model.span(call),
            Severity.ERROR,
            manual=f"call {shown}() in every replica (above the `if`) and use its result on the "
            "master only",
        )


RULE = Rule(
    code=CODE,
    name="one-replica-collective",
    category=Category.CORRECTNESS,
    summary="A collective (mesh_reduce, all_reduce, rendezvous, barrier) that only the master replica calls: the run hangs",
    severity=Severity.ERROR,
    check=check,
    has_fix=False,
    hover={},
)
