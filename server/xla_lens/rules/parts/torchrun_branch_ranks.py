"""XLA202: the runtime's rank answers in a branch only torchrun reaches.

``if "RANK" in os.environ: rank = xr.global_ordinal()`` in a script that torch_xla's launcher
does not start: that branch runs only under torchrun, where the runtime numbers the processes
only once an ``xla://`` process group is built (foreign_launcher.py). Before it every process
answers ordinal 0 and world size 1 (verified on torch_xla 2.9, PJRT CPU, torchrun with two
processes), so the replicas train independently, each reading all the data. This is what a
plain `fix` used to write; `check` on such a script must not be quiet about it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ...semantic.torchrun_env import RUNTIME_RANK_CALLS
from ...semantic.xla_process_group import xla_group_exists_before
from ..base import Finding, RuleContext, Severity
from .foreign_launcher import foreign_launcher

# (comparison) -> (the comparison, whether it asks "launched distributed?"), or None.
Sentinel = Callable[[ScriptModel, ast.AST], "tuple[ast.AST, bool] | None"]


def _torchrun_branch(model: ScriptModel, node: ast.If, sentinel: Sentinel) -> list[ast.stmt]:
    """The side of ``node`` that runs only when torchrun set its variables: the body of
    ``if "RANK" in os.environ [and ...]:``, the ``else`` of ``if env.get("RANK", -1) == -1:``."""
    test = node.test
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    found = [sentinel(model, p) for p in parts]
    if any(f is not None and f[1] for f in found):
        return node.body  # one "distributed" conjunct suffices: the body needs it true
    if len(found) == 1 and found[0] is not None:
        return node.orelse
    return []


def runtime_ranks_in_torchrun_branch(
    model: ScriptModel, ctx: RuleContext, sentinel: Sentinel
) -> Iterator[Finding]:
    if not model.uses_torch_xla:
        return
    calls = [c for c in model.calls if model.call_name(c) in RUNTIME_RANK_CALLS]
    if not calls:
        return
    launcher = foreign_launcher(model, ctx.target)
    if launcher is None or not launcher.torchrun:
        return
    for node in model.nodes_of(ast.If):
        branch = _torchrun_branch(model, node, sentinel)  # type: ignore[arg-type]
        inside = {id(n) for stmt in branch for n in ast.walk(stmt)}
        for call in calls:
            if id(call) not in inside or xla_group_exists_before(model, call, launched=False):
                continue
            yield Finding(
                "XLA202",
                f"`{model.segment(call)}` in a branch only torchrun reaches (line {line_ref(node.lineno)}: "
                f"`{model.segment(node.test)[:60]}`), and no torch_xla launcher starts this "
                "script: under torchrun the XLA runtime numbers the processes only once "
                'init_process_group("xla", init_method="xla://") has set the device runtime up '
                "for torchrun (TPU, Neuron), so here every process gets ordinal 0 and world "
                "size 1 (measured on PJRT CPU: independent replicas, each reading all the data)",
                model.span(call),
                Severity.WARNING,
                manual="read RANK / WORLD_SIZE / LOCAL_RANK from torchrun's environment in this "
                'branch, or build the process group with init_process_group("xla", '
                'init_method="xla://") before it',
            )


__all__ = ["runtime_ranks_in_torchrun_branch"]
