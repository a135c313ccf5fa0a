"""XLA205: Horovod, the distributed backend some scripts use instead of torch.distributed
(held-out 148's UNITER: ``from horovod import torch as hvd``, ``hvd.init()``, rank and size from
``hvd``, gradients all-reduced by ``hvd.allreduce_`` in a helper of ``utils/distributed.py``).

Horovod runs its collectives through MPI, Gloo or NCCL on CPU or CUDA tensors and has no XLA
backend: ``hvd.allreduce_`` on an XLA tensor fails, and ``horovodrun`` starts the processes, not
torch_xla's launcher. What replaces each call is torch_xla's own collective, but the surrounding
code (who launches, which rank reads what, Horovod's averaging default) is the author's to
rewrite, so every site is reported with what replaces it and none gets a fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.line_refs import line_refs
from ...semantic.model import ScriptModel
from ..base import Finding, Severity

PACKAGE = "horovod"
IMPORT_MESSAGE = (
    "Horovod has no XLA backend: its collectives run through MPI, Gloo or NCCL on CPU or CUDA "
    "tensors and cannot take XLA tensors, and its processes come from horovodrun, not torch_xla's "
    "launcher"
)
IMPORT_MANUAL = (
    "Launch the replicas with torch_xla.launch(fn) (or torchrun and "
    "dist.init_process_group('xla', init_method='xla://')), read rank and size from "
    "torch_xla.runtime (xr.global_ordinal(), xr.world_size(), xr.local_ordinal()), step with "
    "xm.optimizer_step(optimizer), which all-reduces the gradients, and replace each hvd "
    "collective with xm.all_reduce / xm.all_gather / xm.collective_broadcast."
)
RANK_READS = {"rank": "xr.global_ordinal()", "size": "xr.world_size()"}
RANK_READS |= {"local_rank": "xr.local_ordinal()", "local_size": "xr.local_device_count()"}
# Horovod's allreduce averages by default (op=Average); xm.all_reduce sums.
AVERAGE_NOTE = (
    "Horovod averages by default (op=hvd.Average) while xm.all_reduce sums: divide by "
    "xr.world_size() where the average is meant"
)
CALLS: dict[str, tuple[str, str]] = {
    "DistributedOptimizer": (
        "wraps the optimizer so that step() all-reduces the gradients through Horovod",
        "Use the plain optimizer and step it with xm.optimizer_step(optimizer), which "
        "all-reduces the gradients across the XLA replicas (or DDP over the xla backend).",
    ),
    "broadcast_parameters": (
        "broadcasts the model's parameters from the root rank through Horovod",
        "Call xm.broadcast_master_param(model) after moving the model to the XLA device (it "
        "sends replica 0's parameters to every replica).",
    ),
    "broadcast_optimizer_state": (
        "broadcasts the optimizer state from the root rank through Horovod",
        "Build the optimizer from the broadcast parameters on every replica (its state starts "
        "empty), or load the same checkpoint on each replica.",
    ),
    "broadcast_object": (
        "pickles an object and broadcasts it through Horovod",
        "Read the value on every replica (the same file or seed), or send a tensor with "
        "xm.collective_broadcast([t], root_ordinal=0).",
    ),
}
COLLECTIVES: dict[str, str] = {
    "allreduce": f"xm.all_reduce(xm.REDUCE_SUM, tensor); {AVERAGE_NOTE}",
    "allgather": "xm.all_gather(tensor, dim=0)",
    "broadcast": "xm.collective_broadcast([tensor], root_ordinal=root_rank) (in place)",
    "alltoall": "xm.all_to_all(tensor, split_dimension, concat_dimension, split_count)",
    "reducescatter": f"xm.reduce_scatter(xm.REDUCE_SUM, tensor, 1.0, dim, shard_count); "
    f"{AVERAGE_NOTE}",
}


def _collective(attr: str) -> str | None:
    """The XLA replacement of Horovod collective ``attr`` (``allreduce_``,
    ``grouped_allreduce_async``, ``broadcast_object`` is a call of its own)."""
    base = attr.removeprefix("grouped_").removesuffix("_").removesuffix("_async")
    return COLLECTIVES.get(base)


def horovod_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    imports = [imp for imp in model.import_nodes if _imports_horovod(imp)]
    if not imports:
        return
    yield Finding(
        code, IMPORT_MESSAGE, model.span(imports[0]), Severity.WARNING, manual=IMPORT_MANUAL
    )
    prefix = f"{PACKAGE}.torch."
    calls = list(model.calls_to_prefix(prefix.rstrip(".")))
    reads: dict[str, list[int]] = {}
    for call, name in calls:
        attr = name.removeprefix(prefix)
        if attr in RANK_READS:
            reads.setdefault(attr, []).append(call.lineno)
    for call, name in calls:
        attr = name.removeprefix(prefix)
        shown = model.segment(call.func)
        if attr == "init":
            yield _init_finding(model, code, call, shown, reads)
        elif attr in CALLS:
            what, manual = CALLS[attr]
            yield Finding(
                code,
                f"{shown}() {what}, which has no XLA backend",
                model.span(call),
                Severity.WARNING,
                manual=manual,
            )
        elif (replacement := _collective(attr)) is not None:
            yield Finding(
                code,
                f"{shown}() is a Horovod collective: it runs on CPU or CUDA tensors through "
                "MPI/Gloo/NCCL and cannot take XLA tensors",
                model.span(call),
                Severity.WARNING,
                manual=f"Use {replacement}.",
            )


def _init_finding(
    model: ScriptModel, code: str, call: ast.Call, shown: str, reads: dict[str, list[int]]
) -> Finding:
    said = [
        f"hvd.{attr}() (line{'s' * (len(set(lines)) > 1)} {line_refs(sorted(set(lines)))}) → "
        f"{RANK_READS[attr]}"
        for attr, lines in reads.items()
    ]
    answers = f"; rank and size read from Horovod: {', '.join(said)}" if said else ""
    return Finding(
        code,
        f"{shown}() starts Horovod: the ranks come from horovodrun over MPI/Gloo, which "
        f"torch_xla's launcher does not start, and Horovod has no XLA backend{answers}",
        model.span(call),
        Severity.WARNING,
        manual="Drop hvd.init() and run the training function under torch_xla.launch(fn) "
        "(one process per XLA device); read rank and size from torch_xla.runtime.",
    )


def _imports_horovod(imp: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(imp, ast.Import):
        return any(a.name == PACKAGE or a.name.startswith(PACKAGE + ".") for a in imp.names)
    return imp.level == 0 and (imp.module or "").split(".")[0] == PACKAGE
