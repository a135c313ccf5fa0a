"""XLA204 for replicas a script starts by hand: one ``multiprocessing`` ``Process`` per GPU.

PreSumm's ``train_abs_multi`` (held-out 98) takes ``mp = torch.multiprocessing.get_context(
'spawn')`` and starts ``mp.Process(target=run, args=(args, device_id, error_queue))`` for each
GPU, each process building its own process group from its device index. On XLA the launcher
(``torch_xla.launch``) starts the replicas and gives each its device and ordinal; no local
rewrite turns the loop, its queues and joins into that, so this is advice at the ``Process``
call. Only a process per device counts: started in a loop over a GPU, device or world count,
or handed a device, GPU or rank index (a data-loading worker is no replica).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, keyword
from ..base import Finding, Severity

MULTIPROCESSING = ("torch.multiprocessing", "multiprocessing")
PER_DEVICE = ("gpu", "device", "world_size", "nproc", "rank")


def _is_multiprocessing(model: ScriptModel, owner: ast.expr) -> bool:
    if (model.qualname(owner) or "") in MULTIPROCESSING:
        return True
    if not isinstance(owner, ast.Name):
        return False
    values = model.assigned_from(owner.id)
    return bool(values) and all(
        isinstance(v, ast.Call)
        and (name := model.call_name(v) or "").endswith(".get_context")
        and name.startswith(MULTIPROCESSING)
        for v in values
    )


def _per_device(model: ScriptModel, call: ast.Call) -> bool:
    loop = next((a for a in model.ancestors(call) if isinstance(a, ast.For)), None)
    if loop is not None and any(w in model.segment(loop.iter).lower() for w in PER_DEVICE):
        return True
    args = keyword(call, "args")
    return args is not None and any(
        isinstance(n, ast.Name) and any(w in n.id.lower() for w in PER_DEVICE)
        for n in ast.walk(args.value)
    )


def hand_launches(model: ScriptModel, code: str) -> Iterator[Finding]:
    functions = model.steps.module_functions
    for call in model.calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "Process"):
            continue
        found = keyword(call, "target")
        target = found.value if found is not None else None
        if not (isinstance(target, ast.Name) and target.id in functions):
            continue
        if not _is_multiprocessing(model, func.value) or not _per_device(model, call):
            continue
        yield Finding(
            code,
            f"the script starts its replicas by hand, one process per device running "
            f"`{target.id}`: on XLA torch_xla's launcher starts them and gives each its device "
            "and ordinal (CUDA device indices and a hand-built process group do not carry "
            "over)",
            model.span(call),
            Severity.WARNING,
            manual=f"Start the replicas with torch_xla.launch(fn, args=(...)), where fn(index, "
            f"...) runs `{target.id}` with the ordinal xr.global_ordinal() in place of the "
            "device index; build the process group inside it with "
            'init_process_group("xla", init_method="xla://"). No fix: the per-process '
            "arguments, queues and joins here are this script's own.",
        )
