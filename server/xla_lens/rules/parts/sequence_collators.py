"""A collate function of the script that pads each batch with ``pad_sequence`` (XLA303; held-out
19, stanford_alpaca's ``DataCollatorForSupervisedDataset``):

    input_ids = torch.nn.utils.rnn.pad_sequence(input_ids, batch_first=True, padding_value=pad)

``pad_sequence`` pads to the longest row of the batch, so every batch brings a new length and
XLA compiles the step again (measured by the probe on alpaca after the safe fixes: 12 uncached
compiles in 8 steps). Reported at the call with advice and no fix: padding to a fixed length
must pad the labels with the ignore index, not the pad id, and truncate what is longer, which a
tool cannot choose for the script.

A collate function is a ``__call__`` of a class or a function whose name says ``collate``, or a
function or class passed as ``collate_fn=`` / ``data_collator=``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ..base import Finding, Severity

PAD_SEQUENCE = frozenset({"torch.nn.utils.rnn.pad_sequence"})
COLLATOR_KEYWORDS = frozenset({"collate_fn", "data_collator"})
MANUAL = (
    "Pad every batch to one fixed length instead: `torch.nn.functional.pad(x, (0, max_len - "
    "x.size(-1)), value=pad_id)` for each row (truncated to max_len first), labels padded with "
    "the ignore index (-100), then torch.stack; or round the longest length up to a multiple "
    "(pad_to_multiple_of) to bound the number of shapes."
)


def sequence_collator_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    calls = list(model.calls_to(*PAD_SEQUENCE))
    if not calls:
        return
    passed = _passed_collators(model)
    for call in calls:
        fn = model.enclosing_function(call)
        if fn is None or not _is_collator(model, fn, passed):
            continue
        where = _shown(model, fn)
        yield Finding(
            code,
            f"`{model.segment(call.func)}` in the collate function `{where}` pads each batch "
            "to its longest row: every batch gets a new length and XLA recompiles the step "
            "for each one",
            model.span(call),
            Severity.WARNING,
            manual=MANUAL,
        )


def longest_row_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    """A collate function that allocates the batch at its longest row's length
    (``max_len = max([x.size(1) for x in batch])`` then ``torch.FloatTensor(len(batch), n,
    max_len).zero_()``: held-out 20, tacotron2's TextMelCollate), once per function."""
    passed = _passed_collators(model)
    for fn in model.nodes_of(ast.FunctionDef):
        assert isinstance(fn, ast.FunctionDef)
        if not _is_collator(model, fn, passed):
            continue
        longest = {
            t.id
            for n in model.walk_scope(fn)
            if isinstance(n, ast.Assign) and _is_max(n.value)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        if not longest:
            continue
        allocations = sorted(
            (
                n
                for n in model.walk_scope(fn)
                if (
                    (isinstance(n, ast.Call) and (_allocates(model, n) or _pads(model, n)))
                    or _list_pad(n)
                )
                and any(
                    isinstance(a, ast.Name) and a.id in longest
                    for arg in (n.args if isinstance(n, ast.Call) else [n])
                    for a in ast.walk(arg)
                )
            ),
            key=lambda n: (n.lineno, n.col_offset),
        )
        if allocations:
            call = allocations[0]
            yield Finding(
                code,
                f"`{model.segment(call)[:60]}` in the collate function `{_shown(model, fn)}` "
                "sizes the "
                "batch by its longest row: every batch gets a new length and XLA recompiles "
                "the step for each one",
                model.span(call),
                Severity.WARNING,
                manual=MANUAL,
            )


ALLOCATORS = frozenset(
    {
        "torch.zeros",
        "torch.ones",
        "torch.full",
        "torch.empty",
        "torch.Tensor",
        "torch.FloatTensor",
        "torch.LongTensor",
        "torch.IntTensor",
        "torch.BoolTensor",
    }
)


def _shown(model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    cls = next((a for a in model.ancestors(fn) if isinstance(a, ast.ClassDef)), None)
    return f"{cls.name}.{fn.name}" if cls is not None else fn.name


def _allocates(model: ScriptModel, call: ast.Call) -> bool:
    if model.call_name(call) in ALLOCATORS:
        return True
    return isinstance(call.func, ast.Attribute) and call.func.attr in {"new_zeros", "new_full"}


PADS = frozenset({"torch.nn.functional.pad"})


def _pads(model: ScriptModel, call: ast.Call) -> bool:
    """``F.pad(x, (0, longest - x.size(0)))``."""
    return model.call_name(call) in PADS


def _list_pad(node: ast.AST) -> bool:
    """``item + [pad_id] * (longest - len(item))``: a Python list padded to the longest row
    (LLMs-from-scratch's instruction collate, held-out 104), made a tensor after."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult)
        and (isinstance(node.left, ast.List) or isinstance(node.right, ast.List))
    )


def _is_max(value: ast.expr | None) -> bool:
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Name) and func.id == "max" and value.args:
        return True
    return isinstance(func, ast.Attribute) and func.attr == "max" and not value.args


def _passed_collators(model: ScriptModel) -> set[str]:
    """Names of functions and classes passed as ``collate_fn=`` / ``data_collator=``
    (``collate_fn=collate``, ``data_collator=Collator(tok)``)."""
    out: set[str] = set()
    for call in model.calls:
        for kw in call.keywords:
            if kw.arg not in COLLATOR_KEYWORDS:
                continue
            value = kw.value.func if isinstance(kw.value, ast.Call) else kw.value
            if isinstance(value, ast.Name):
                out.add(value.id)
            elif isinstance(value, ast.Attribute):
                out.add(value.attr)
    # ``data_collator = Collator(tok)`` then ``Trainer(..., data_collator=data_collator)``.
    for name in list(out):
        for value in model.assigned_from(name):
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                out.add(value.func.id)
    return out


def _is_collator(
    model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef, passed: set[str]
) -> bool:
    if fn.name in passed or "collate" in fn.name.lower():
        return True
    if fn.name != "__call__":
        return False
    cls = next((a for a in model.ancestors(fn) if isinstance(a, ast.ClassDef)), None)
    return cls is not None and (cls.name in passed or "collat" in cls.name.lower())


__all__ = ["longest_row_findings", "sequence_collator_findings"]
