"""XLA205 on a torch.distributed collective in an accelerate script, unguarded (it raises on
XLA: no process group) or run only under
``torch.distributed.is_initialized()`` (held-out 48's Omega-Net: the early-stop flag is
broadcast from the main process that way). On XLA accelerate starts no torch.distributed
process group — its XLA backend numbers the processes with the XLA runtime and reduces with
its collectives (``AcceleratorState``'s "xla" branch in accelerate/state.py) — so the guard is
False there and the collective never runs: only the main process stops early, the others
wait in their next all-reduce. accelerate's own operations work on every backend. No fix: which
one fits (``accelerate.utils.broadcast``, ``accelerator.reduce``, ``set_trigger`` /
``check_trigger``) depends on what the collective is for."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.frameworks import ownership
from ...semantic.model import ScriptModel
from ..base import Finding, Severity

GROUP_TESTS = frozenset({"torch.distributed.is_initialized", "torch.distributed.is_available"})
COLLECTIVES = frozenset(
    {
        "torch.distributed.broadcast",
        "torch.distributed.all_reduce",
        "torch.distributed.all_gather",
        "torch.distributed.all_gather_into_tensor",
        "torch.distributed.reduce",
        "torch.distributed.barrier",
        "torch.distributed.broadcast_object_list",
        "torch.distributed.all_gather_object",
    }
)
ACCELERATE_OPS = {
    "torch.distributed.broadcast": "accelerate.utils.broadcast(tensor, from_process=0)",
    "torch.distributed.broadcast_object_list": "accelerate.utils.broadcast_object_list(objects)",
    "torch.distributed.all_reduce": 'accelerator.reduce(tensor, reduction="sum")',
    "torch.distributed.reduce": 'accelerator.reduce(tensor, reduction="sum")',
    "torch.distributed.all_gather": "accelerator.gather(tensor)",
    "torch.distributed.all_gather_into_tensor": "accelerator.gather(tensor)",
    "torch.distributed.all_gather_object": "accelerate.utils.gather_object(obj)",
    "torch.distributed.barrier": "accelerator.wait_for_everyone()",
}


def _group_guard(model: ScriptModel, call: ast.Call) -> ast.If | None:
    for a in model.ancestors(call):
        if isinstance(a, ast.If) and any(
            isinstance(n, ast.Call) and model.call_name(n) in GROUP_TESTS for n in ast.walk(a.test)
        ):
            return a
    return None


def accelerate_dist_guard_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    if ownership(model).framework != "accelerate":
        return
    if any(True for _ in model.calls_to("torch.distributed.init_process_group")):
        return  # the script builds its own group: its collectives have one
    for call in model.calls_to(*COLLECTIVES):
        name = model.call_name(call) or ""
        short = name.rpartition(".")[2]
        guard = _group_guard(model, call)
        if guard is None:
            # Unguarded (held-out 52, MOSS's metric: ``dist.all_reduce(self.right)``): with no
            # default process group torch.distributed raises on XLA ("Default process group
            # has not been initialized").
            yield Finding(
                code,
                f"{short}() needs a torch.distributed process group, and on XLA accelerate "
                "starts none (it numbers and reduces with the XLA runtime): this call raises "
                "there (default process group not initialized)",
                model.span(call),
                Severity.WARNING,
                manual=f"Use accelerate's own operation, which works on every backend: "
                f"{ACCELERATE_OPS[name]}.",
            )
            continue
        yield Finding(
            code,
            f"{short}() runs only when `{model.segment(guard.test)}`: on XLA accelerate starts "
            "no torch.distributed process group (it numbers and reduces with the XLA runtime), "
            "so this collective never runs there and the processes no longer agree",
            model.span(call),
            Severity.WARNING,
            manual=f"Use accelerate's own operation, which works on every backend: "
            f"{ACCELERATE_OPS[name]}.",
        )
