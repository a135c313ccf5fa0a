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

from ...semantic.ddp_wrappers import model_wrappers
from ...semantic.model import ScriptModel, dotted
from ...semantic.training_loops import TrainingLoop
from .ddp_helpers import unseen_device_ids_calls


def unseen_ddp_reason(model: ScriptModel, loop: TrainingLoop, distributed: bool) -> str | None:
    """Why the model may already be reduced by DDP that this file does not show, or None.
    ``distributed``: the script starts or joins several processes (a library call that only
    returns the model is evidence of DDP only then; ``device_ids`` is evidence by itself)."""
    for call, _kw in unseen_device_ids_calls(model):
        return _reason(f"`{model.segment(call.func)}(device_ids=...)` (line {call.lineno})")
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


def _reason(what: str) -> str:
    return (
        f"{what} runs code xla-lens cannot see that may wrap the model in DDP: DDP already "
        "all-reduces the gradients in backward, and xm.optimizer_step would all-reduce them a "
        "second time every step; if it does, keep optimizer.step() (and the sync XLA107 adds)"
    )
