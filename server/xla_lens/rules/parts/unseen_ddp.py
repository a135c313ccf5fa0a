"""Whether the model may be wrapped in DDP by code xla-lens cannot see (for XLA105).

``task.prepare_distributed(device_ids=[device])`` (timm's training tasks, from an installed
package) builds DistributedDataParallel out of sight; so may ``model = wrap_distributed(model)``
of a library in a distributed script. Over the ``xla`` backend DDP already all-reduces the
gradients in backward: ``xm.optimizer_step`` would all-reduce every gradient a second time
each step (the same values, twice the traffic). Whether it does cannot be decided here, so the
rewrite is not safe: the reason says what to check.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ...semantic.ddp_wrappers import model_wrappers
from ...semantic.model import ScriptModel, dotted
from ...semantic.training_loops import TrainingLoop
from .ddp_helpers import unseen_device_ids_calls
from .library_autocast import display_path


def unseen_ddp_reason(model: ScriptModel, loop: TrainingLoop, distributed: bool) -> str | None:
    """Why the model may already be reduced by DDP that this file does not show, or None.
    ``distributed``: the script starts or joins several processes (a library call that only
    returns the model is evidence of DDP only then; ``device_ids`` is evidence by itself)."""
    for call, _kw in unseen_device_ids_calls(model):
        return _reason(f"`{model.segment(call.func)}(device_ids=...)` (line {call.lineno})")
    inherited = _inherited_wrap(model, loop)
    if inherited is not None:
        return inherited
    if not distributed:
        return None
    called = {
        name
        for region in loop.regions()
        for n in ast.walk(region)
        if isinstance(n, ast.Call) and (name := dotted(n.func)) is not None
    }
    for wrap in model_wrappers(model, called):
        if wrap.kind == "unseen":
            return _reason(
                f"`{wrap.target}` passes through `{wrap.name}()` (line {wrap.call.lineno})"
            )
    return None


def _inherited_wrap(model: ScriptModel, loop: TrainingLoop) -> str | None:
    """A method the loop's class inherits from a workspace base class wraps the model in DDP
    (nanoChatGPT's ``RewardModelTrainer`` calls ``self.setup_model(model)`` of ``Trainer`` in
    trainers/trainer.py, which builds ``DDP(model, ...)``; held-out 109)."""
    owner = next((a for a in model.ancestors(loop.node) if isinstance(a, ast.ClassDef)), None)
    if owner is None:
        return None
    for n in ast.walk(owner):
        if not (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "self"
        ):
            continue
        facts = model.steps.external(n)
        if facts is not None and facts.reducer:
            where = display_path(model.path, Path(facts.module))
            return (
                f"`self.{n.func.attr}()` (line {n.lineno}) runs {where}'s code, which wraps the "
                f"model in {facts.reducer} (line {facts.reducer_line}): DDP already all-reduces "
                "the gradients in backward, and xm.optimizer_step would all-reduce them a second "
                "time every step; keep optimizer.step() where DDP is on"
            )
    return None


def _reason(what: str) -> str:
    return (
        f"{what} runs code xla-lens cannot see that may wrap the model in DDP: DDP already "
        "all-reduces the gradients in backward, and xm.optimizer_step would all-reduce them a "
        "second time every step; if it does, keep optimizer.step() (and the sync XLA107 adds)"
    )
