"""torch_xla's modules handed to a class instead of imported (held-out 82's TPU-Star control:
``TorchTPUExperiment(..., xm=xm, pl=pl)`` keeps ``self.xm = xm`` and calls
``self.xm.optimizer_step(...)``, ``self.pl.ParallelLoader(...)``, ``self.xm.set_rng_state(...)``;
the package imports the module on machines without torch_xla, so it never imports it).

Such a module is written for XLA, and a module-level ``import torch_xla`` added to it would
fail where it is imported without torch_xla. Recognised by the conventional names: an
attribute or a parameter called ``xm``, ``pl``, ``xmp``, ``xr`` or ``met``, not bound by an
import, called with a name of that torch_xla module's API. Pure analysis.
"""

from __future__ import annotations

import ast

from .model import ScriptModel

# Conventional alias -> names of its torch_xla module's API (enough to tell it is that module).
API: dict[str, frozenset[str]] = {
    "xm": frozenset(
        {
            "xla_device",
            "optimizer_step",
            "mark_step",
            "master_print",
            "mesh_reduce",
            "save",
            "set_rng_state",
            "rendezvous",
            "is_master_ordinal",
            "get_ordinal",
            "xrt_world_size",
            "add_step_closure",
            "all_reduce",
            "reduce_gradients",
            "wait_device_ops",
            "get_memory_info",
        }
    ),
    "pl": frozenset({"ParallelLoader", "MpDeviceLoader"}),
    "xmp": frozenset({"spawn"}),
    "xr": frozenset({"world_size", "global_ordinal", "local_ordinal", "use_spmd"}),
    "met": frozenset({"metrics_report", "short_metrics_report", "executed_fallback_ops"}),
}
SEEDING = frozenset({"set_rng_state"})


def injected_xla_calls(model: ScriptModel) -> list[ast.Call]:
    """``self.xm.optimizer_step(...)`` / ``xm.master_print(...)`` with ``xm`` not imported."""
    return model.memo(injected_xla_calls, lambda: list(_calls(model)))


def _calls(model: ScriptModel):  # type: ignore[no-untyped-def]
    for call in model.calls:
        func = call.func
        if not isinstance(func, ast.Attribute):
            continue
        holder = func.value
        alias = (
            holder.attr
            if isinstance(holder, ast.Attribute)
            else holder.id
            if isinstance(holder, ast.Name)
            else None
        )
        if alias not in API or func.attr not in API[alias]:
            continue
        if isinstance(holder, ast.Name) and holder.id in model.imports:
            continue  # an imported torch_xla module: the model resolves it already
        yield call


def seeds_xla_in(model: ScriptModel, scope: ast.AST | None) -> ast.Call | None:
    """A call seeding the XLA device in ``scope`` (``torch_xla.manual_seed``,
    ``xm.set_rng_state``, imported or handed in), or None."""
    root = scope if scope is not None else model.tree
    for node in ast.walk(root):
        if not isinstance(node, ast.Call):
            continue
        if model.call_name(node) in {
            "torch_xla.manual_seed",
            "torch_xla.core.xla_model.set_rng_state",
        }:
            return node
        if node in _injected_set(model) and node.func.attr in SEEDING:  # type: ignore[attr-defined]
            return node
    return None


def _injected_set(model: ScriptModel) -> set[ast.Call]:
    return model.memo(_injected_set, lambda: set(injected_xla_calls(model)))
