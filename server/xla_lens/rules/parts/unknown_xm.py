"""XLA501: an attribute of ``torch_xla.core.xla_model`` that torch_xla 2.9 does not have.

``xm.optimizer.zero_grad(optimizer)`` / ``xm.optimizer.step()`` (held-out 64's Bert_Sentiment,
written for a torch_xla it never ran on) raise AttributeError at the first step. The names are
the module's, read from torch_xla 2.9's ``dir(xm)`` when this list was written (the target
this tool converts to); the deprecated and removed ones XLA501 maps are said by their own
finding, not here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ..base import Finding, Severity

XLA_MODEL = "torch_xla.core.xla_model"
# dir(torch_xla.core.xla_model) on torch_xla 2.9.0.
XM_NAMES = frozenset(
    {
        "Any",
        "Callable",
        "CoalescingBuckets",
        "DeviceContext",
        "Dict",
        "F",
        "Library",
        "List",
        "MemoryInfo",
        "Optional",
        "REDUCE_AND",
        "REDUCE_MAX",
        "REDUCE_MIN",
        "REDUCE_MUL",
        "REDUCE_OR",
        "REDUCE_SUM",
        "RateTracker",
        "Set",
        "ShardingSpec",
        "TextIO",
        "ToXlaTensorArena",
        "Tuple",
        "TypedDict",
        "Union",
        "XLA_LIB",
        "_DEVICES",
        "_DEVICE_CONTEXTS",
        "_DEVICE_CONTEXTS_LOCK",
        "_all_gather_using_all_reduce",
        "_fetch_gradients",
        "_get_all_reduce_token",
        "_get_device_context",
        "_maybe_convert_to_cpu",
        "_run_step_closures",
        "_utils",
        "_xla_real_device",
        "add_step_closure",
        "all_gather",
        "all_gather_bucketized",
        "all_reduce",
        "all_reduce_bucketized_gradients",
        "all_to_all",
        "broadcast_master_param",
        "check_view_sharing",
        "collective_broadcast",
        "collective_permute",
        "contextlib",
        "create_optimized_replica_groups",
        "deprecated",
        "do_on_ordinals",
        "fork_rng",
        "get_local_ordinal",
        "get_memory_info",
        "get_rng_state",
        "get_stablehlo",
        "get_stablehlo_bytecode",
        "get_xla_supported_devices",
        "io",
        "is_master_ordinal",
        "is_xla_tensor",
        "itertools",
        "logging",
        "mark_step",
        "master_print",
        "mesh_reduce",
        "ms",
        "optim",
        "optimization_barrier_",
        "optimizer_step",
        "os",
        "re",
        "recv",
        "reduce_gradients",
        "reduce_scatter",
        "reduce_scatter_bucketized",
        "rendezvous",
        "runtime",
        "save",
        "send",
        "send_cpu_data_to_device",
        "set_replication",
        "set_rng_state",
        "sys",
        "this_module",
        "threading",
        "time",
        "torch",
        "torch_xla",
        "unlazy",
        "wait_device_ops",
        "warnings",
        "xc",
        "xenv",
        "xla_device",
        "xla_device_hw",
        "xla_device_kind",
        "xla_real_devices",
        "xla_rendezvous",
        "xla_replication_devices",
        "xu",
    }
)


def unknown_xm_attributes(
    model: ScriptModel, code: str, mapped: frozenset[str]
) -> Iterator[Finding]:
    if "torch_xla" not in model.source:
        return
    said: set[int] = set()
    for node in model.nodes_of(ast.Attribute):
        assert isinstance(node, ast.Attribute)
        if node.attr in XM_NAMES or node.attr in mapped or node.lineno in said:
            continue
        if model.qualname(node.value) != XLA_MODEL:
            continue
        said.add(node.lineno)
        yield Finding(
            code,
            f"torch_xla.core.xla_model has no `{node.attr}` in torch_xla 2.9: "
            f"`{model.segment(node)}` raises AttributeError when it runs",
            model.span(node),
            Severity.ERROR,
            manual=(
                "Use the torch_xla 2.x API: an optimizer step is xm.optimizer_step(optimizer) "
                "(or optimizer.step()), zero_grad stays optimizer.zero_grad()."
                if node.attr.startswith("optim")
                else "Use the torch_xla 2.x API (torch_xla.core.xla_model, torch_xla.runtime, "
                "torch_xla.sync()): this name is in neither."
            ),
        )
