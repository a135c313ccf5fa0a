"""XLA204: work gated on a rank option that the XLA launcher never sets (held-outs 156 and 157:
IFRNet's and TinyBERT's ``--local_rank`` with ``default=-1``, then ``if local_rank == 0:`` for
the log, the evaluation and the checkpoint).

torch.distributed.launch passes ``--local_rank`` to each process; torch_xla's launcher passes
nothing, so under it every replica keeps the default. ``== 0`` is then never true: no replica
saves, logs or evaluates, and the run ends with exit code 0 and nothing written. ``in [-1, 0]``
is true in every replica: each one acts as the master (every replica writes the same files).
Said in the launcher fix's review reason; the rank to test there is ``xr.global_ordinal()``.
"""

from __future__ import annotations

import ast

from ...semantic.arguments import argparse_options
from ...semantic.line_refs import line_refs
from ...semantic.model import ScriptModel


def rank_option_reason(model: ScriptModel) -> str:
    """Why the launcher changes what the rank gates do, or ""."""
    for dest, option in argparse_options(model).items():
        if "rank" not in dest.lower() or not _negative_one(option.default):
            continue
        readers = _readers(model, dest)
        never = [c for c in model.nodes_of(ast.Compare) if _tests_zero(c, readers)]
        every = [c for c in model.nodes_of(ast.Compare) if _tests_master_set(c, readers)]
        if not (never or every):
            continue
        what = []
        if never:
            what.append(
                f"`{model.segment(never[0])[:40]}` (line{'s' * (len(never) > 1)} "
                f"{line_refs(sorted({c.lineno for c in never}))}) is never true, so no replica "
                "does that work (saving, logging, evaluation)"
            )
        if every:
            what.append(
                f"`{model.segment(every[0])[:40]}` (line{'s' * (len(every) > 1)} "
                f"{line_refs(sorted({c.lineno for c in every}))}) is true in every replica, so "
                "each acts as the master"
            )
        return (
            f"--{dest} defaults to -1 and the XLA launcher passes no --{dest}, so every "
            f"replica keeps -1: {'; '.join(what)}; test xr.global_ordinal() there instead"
        )
    return ""


def _negative_one(node: ast.expr | None) -> bool:
    return (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and node.operand.value == 1
    )


def _readers(model: ScriptModel, dest: str) -> set[str]:
    """Names bound to the option (``local_rank = args.local_rank``), and its attribute."""
    names = {f".{dest}"}
    for a in model.nodes_of(ast.Assign):
        assert isinstance(a, ast.Assign)
        if (
            len(a.targets) == 1
            and isinstance(a.targets[0], ast.Name)
            and isinstance(a.value, ast.Attribute)
            and a.value.attr == dest
        ):
            names.add(a.targets[0].id)
    return names


def _reads(node: ast.expr, readers: set[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return f".{node.attr}" in readers
    return isinstance(node, ast.Name) and node.id in readers


def _tests_zero(c: ast.Compare, readers: set[str]) -> bool:
    if len(c.ops) != 1 or not isinstance(c.ops[0], ast.Eq):
        return False
    sides = [c.left, c.comparators[0]]
    return any(_reads(s, readers) for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == 0 and type(s.value) is int for s in sides
    )


def _tests_master_set(c: ast.Compare, readers: set[str]) -> bool:
    """``args.local_rank in [-1, 0]``: -1 counts as the master."""
    if len(c.ops) != 1 or not isinstance(c.ops[0], ast.In) or not _reads(c.left, readers):
        return False
    group = c.comparators[0]
    return isinstance(group, ast.List | ast.Tuple | ast.Set) and any(
        _negative_one(e) for e in group.elts
    )
