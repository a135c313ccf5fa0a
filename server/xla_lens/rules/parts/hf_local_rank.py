"""XLA202 on ``training_args.local_rank`` tests in HF Trainer scripts.

transformers fills ``TrainingArguments.local_rank`` from torchrun's ``LOCAL_RANK`` only: under
torch_xla's launcher it is -1 on every replica (measured with transformers 5.25 and
``torch_xla.launch`` on 2 CPU devices: ``local_rank=-1`` in both, ``process_index`` 0 and 1).
So ``if training_args.local_rank == 0: model.save_pretrained(...)`` (FastChat's LoRA trainer,
held-out 38) never runs on XLA, and the adapter is silently never written; ``local_rank in
[-1, 0]`` runs in every replica. ``local_process_index`` is -1 there too (measured);
``process_index`` is right (0, 1, ...), and ``should_save`` / ``trainer.is_world_process_zero()``
are transformers' own way to ask.

The fix, ``process_index == 0``, is for review: it counts processes over all nodes, so with
several nodes only the first node's first process runs the branch (a local-rank test ran it
once per node), and ``== 0`` was False in a run without torchrun, where ``process_index`` is 0.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.hf_args import hf_arguments, is_training_args_name
from ...semantic.model import ScriptModel, dotted
from ..base import Finding, Fix, Replace, Severity

ARGS_NAMES = ("training_args", "trainer.args", "self.args")
MESSAGE = (
    "`{shown}` reads TrainingArguments.local_rank, which transformers sets from torchrun's "
    "LOCAL_RANK only: under torch_xla's launcher it is -1 in every replica (measured), so "
    "{effect}; `process_index` (or `should_save`) answers for any launcher"
)
REVIEW_NODES = (
    "process_index counts processes over all nodes: with several nodes only the first node's "
    "first process takes this branch, where the local-rank test took it once per node"
)
REVIEW_ZERO = (
    f"{REVIEW_NODES}; and without torchrun (one process) local_rank is -1 and this test is "
    "False, while process_index == 0 is True there"
)


def hf_local_rank_tests(model: ScriptModel, code: str) -> Iterator[Finding]:
    if "local_rank" not in model.source or not _hf_script(model):
        return
    for node in model.nodes_of(ast.Compare):
        assert isinstance(node, ast.Compare)
        found = _local_rank_test(model, node)
        if found is None:
            continue
        args, kind = found
        shown = model.segment(node)
        if kind == "first":
            effect = "this test is True in every replica (all of them run its branch)"
            reason = REVIEW_NODES
        else:
            effect = "this test is never True there and its branch never runs"
            reason = REVIEW_ZERO
        fix = Fix(
            "Test process_index == 0",
            (Replace(model.span(node), f"{args}.process_index == 0"),),
            safe=False,
            review_reason=reason,
        )
        yield Finding(
            code,
            MESSAGE.format(shown=shown[:60], effect=effect),
            model.span(node),
            Severity.WARNING,
            fix=fix,
        )


def _hf_script(model: ScriptModel) -> bool:
    hf = hf_arguments(model)
    return (
        model.uses_trainer
        or bool(hf.subclasses)
        or any(is_training_args_name(name) for name in model.imports.values())
    )


def _local_rank_test(model: ScriptModel, node: ast.Compare) -> tuple[str, str] | None:
    """``(receiver, "zero" | "first")`` for ``args.local_rank == 0`` (or ``0 == ...``) and
    ``args.local_rank in (-1, 0)`` / ``<= 0``; None for anything else."""
    if len(node.ops) != 1:
        return None
    left, op, right = node.left, node.ops[0], node.comparators[0]
    if isinstance(right, ast.Attribute) and right.attr == "local_rank" and isinstance(op, ast.Eq):
        left, right = right, left
    if not (isinstance(left, ast.Attribute) and left.attr == "local_rank"):
        return None
    receiver = dotted(left.value)
    if receiver is None or not (receiver in ARGS_NAMES or receiver.endswith("training_args")):
        return None
    if isinstance(op, ast.Eq) and _constant(right) == 0:
        return receiver, "zero"
    if isinstance(op, ast.LtE) and _constant(right) == 0:
        return receiver, "first"
    if isinstance(op, ast.In) and isinstance(right, ast.List | ast.Tuple | ast.Set):
        if sorted(_constant(e) for e in right.elts) == [-1, 0]:
            return receiver, "first"
    return None


def _constant(node: ast.AST) -> object:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant(node.operand)
        return -inner if isinstance(inner, int) else None
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int) else None
