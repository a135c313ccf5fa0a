"""Saves of the trained model that cannot write XLA tensors (XLA108).

- Past the Trainer: ``trainer.train()`` then ``trainer.model.save(output_dir)`` /
  ``model.save_pretrained(output_dir)`` (instructor-embedding, held-out 35). On XLA the Trainer
  keeps the model on the XLA device and such a save runs in every replica with it there.
- In a native loop: ``eval_model.save_pretrained(path)`` of a module the script moves to its
  device (nanoVLM, held-out 36).

transformers' ``save_pretrained`` writes safetensors, which cannot read XLA storage
(``RuntimeError: Attempted to access the data pointer on an invalid python storage``, measured
with transformers 5 and torch_xla 2.9; sentence-transformers' ``save`` goes through it).
``trainer.save_model(path)`` copies the weights to the CPU and writes on the main process only.
No fix: ``save_model`` writes what the Trainer saves (its arguments, the tokenizer), not
necessarily the same files as the library's own ``save``; a library's ``save_pretrained`` may
or may not take the CPU state it should write.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.device_intent import being_converted
from ...semantic.model import ScriptModel, dotted, keyword, method_name
from ...semantic.optimizer_events import moves_to_a_device
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
    said: set[int] = set()  # one finding per save, however many ``.train()`` calls precede it
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
                and id(node) not in said
                and not given_other_state(node)
            ):
                said.add(id(node))
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


def given_other_state(call: ast.Call) -> bool:
    """``model.save_pretrained(out, state_dict=state)`` with a state that is not the module's
    own ``.state_dict()``: the library writes what it is given (FastChat's LoRA trainer hands
    CPU copies, held-out 38), so where that state lives is decided elsewhere."""
    given = keyword(call, "state_dict")
    if given is None:
        return False
    value = given.value
    return not (isinstance(value, ast.Call) and method_name(value) == "state_dict")


def moved_roots(model: ScriptModel) -> set[str]:
    """Names whose module the script moves to a device (``model.to(device)``, ``net.cuda()``),
    and names assigned from them (``eval_model = model.module if ddp else model``)."""
    roots = set()
    for call in model.calls:
        if method_name(call) in ("to", "cuda") and moves_to_a_device(model, call):
            moved = dotted(call.func.value)  # type: ignore[attr-defined]
            if moved is not None:
                roots.add(moved.split(".")[0])
            stmt = model.parent(call)
            if isinstance(stmt, ast.Assign) and stmt.value is call:
                # ``model = build().to(device)``
                roots.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    for name, assigns in model.assignments.items():
        if name in roots:
            continue
        for a in assigns:
            if a.value is not None and any(
                isinstance(n, ast.Name) and n.id in roots for n in ast.walk(a.value)
            ):
                roots.add(name)
                break
    return roots


def device_model_saves(model: ScriptModel, code: str) -> Iterator[Finding]:
    """``eval_model.save_pretrained(path)`` of a module the script moves to its device
    (nanoVLM's checkpoint, held-out 36): after conversion the weights are XLA tensors, which
    the safetensors writer cannot read (RuntimeError, measured). No fix: a library's
    ``save_pretrained`` may or may not take the CPU state it should write."""
    if "save_pretrained" not in model.source or not being_converted(model):
        return
    said = [f.span for f in trainer_model_saves(model, code)]
    trainer_saves = {id(c) for c in model.calls if model.span(c) in said}
    roots = None
    for call in model.calls:
        if method_name(call) != "save_pretrained" or not isinstance(call.func, ast.Attribute):
            continue
        name = (dotted(call.func.value) or "").split(".")[0]
        if id(call) in trainer_saves or given_other_state(call):
            continue  # said as a save past the Trainer, or it writes the state it is given
        if roots is None:
            roots = moved_roots(model)
        if name not in roots:
            continue
        shown = model.segment(call.func)
        yield Finding(
            code,
            f"`{shown}(...)` saves a model the script moves to its device: after conversion its "
            "weights are XLA tensors, and save_pretrained's safetensors writer cannot read them "
            "(RuntimeError, measured); every replica that reaches it also writes",
            model.span(call),
            Severity.WARNING,
            manual="Write a CPU copy on the master only: e.g. "
            "`state = {k: v.cpu() for k, v in model.state_dict().items()}` and save that "
            "(save_pretrained(path, state_dict=state) where the library takes one), under "
            "`if xm.is_master_ordinal():`.",
        )
