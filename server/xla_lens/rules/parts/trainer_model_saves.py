"""The trained model saved past the Trainer (XLA108): ``trainer.train()`` then
``trainer.model.save(output_dir)`` / ``model.save_pretrained(output_dir)`` (instructor-embedding,
held-out 35).

On XLA the Trainer keeps the model on the XLA device, and such a save runs in every replica
with it there: transformers' ``save_pretrained`` writes safetensors, which cannot read XLA
storage (``RuntimeError: Attempted to access the data pointer on an invalid python storage``,
measured with transformers 5 and torch_xla 2.9; sentence-transformers' ``save`` goes through
it). ``trainer.save_model(path)`` copies the weights to the CPU and writes on the main process
only. No fix: ``save_model`` writes what the Trainer saves (its arguments, the tokenizer), not
necessarily the same files as the library's own ``save``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, dotted, keyword, method_name
from ..base import Finding, Severity

SAVE_METHODS = frozenset({"save_pretrained", "save"})


def _trainers(model: ScriptModel, scope: ast.AST) -> dict[str, str | None]:
    """``trainer = SomeTrainer(model=model, args=..., ...)`` in ``scope``: the trainer's name
    -> the name of the model it was given (None when not a plain name)."""
    out: dict[str, str | None] = {}
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
            continue
        given = keyword(value, "model")
        if given is None or keyword(value, "args") is None:
            continue
        if not (dotted(value.func) or "").endswith("Trainer"):
            continue
        out[target.id] = given.value.id if isinstance(given.value, ast.Name) else None
    return out


def trainer_model_saves(model: ScriptModel, code: str) -> Iterator[Finding]:
    if "Trainer" not in model.source:
        return  # the cheap test first
    # Names assigned a ``...Trainer(...)`` anywhere: only their ``.train()`` is looked at.
    named = {
        t.id
        for node in model.nodes_of(ast.Assign)
        if isinstance(node.value, ast.Call)  # type: ignore[attr-defined]
        and (dotted(node.value.func) or "").endswith("Trainer")  # type: ignore[attr-defined]
        for t in node.targets  # type: ignore[attr-defined]
        if isinstance(t, ast.Name)
    }
    if not named:
        return
    for call in model.calls:
        if method_name(call) != "train" or not isinstance(call.func, ast.Attribute):
            continue
        trainer = dotted(call.func.value)
        if trainer is None or trainer not in named:
            continue  # ``model.train()``: most ``.train()`` calls are no Trainer's
        scope = next(
            (a for a in model.ancestors(call) if isinstance(a, ast.FunctionDef | ast.Module)),
            model.tree,
        )
        trainers = _trainers(model, scope)
        if trainer not in trainers:
            continue
        saved = {f"{trainer}.model", trainers[trainer]} - {None}
        for node in ast.walk(scope):
            if (
                isinstance(node, ast.Call)
                and method_name(node) in SAVE_METHODS
                and node.lineno > call.lineno
                and dotted(node.func.value) in saved  # type: ignore[attr-defined]
            ):
                shown = model.segment(node.func)
                yield Finding(
                    code,
                    f"`{shown}(...)` saves the trained model past the Trainer: on XLA the "
                    "model is still on the XLA device here, transformers' save_pretrained "
                    "cannot write XLA tensors (RuntimeError, measured) and every replica "
                    "writes; `trainer.save_model(path)` copies the weights to the CPU and "
                    "writes once",
                    model.span(node),
                    Severity.WARNING,
                    manual=f"Save with `{trainer}.save_model(...)`, or copy the state to the "
                    "CPU first and write it on the main process only.",
                )
