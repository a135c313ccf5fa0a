"""XLA405: ``module.share_memory()`` / ``tensor.share_memory_()`` on what the script places on
its device (DeepRL's agents, Hogwild examples).

For CUDA tensors the call is a no-op (CUDA IPC shares them already); for XLA tensors it
raises "_share_fd_: only available on CPU" (measured, torch_xla 2.9): the conversion's
device fix turns a working line into a crash. A receiver the script moves to a device
(``net = Net().to(device)``, ``net.cuda()``) is a warning; one whose placement is out of
reach (built by a factory) is information, in a script that places things on a device at
all. A script that places nothing trains its shared model on the CPU (Hogwild), where the
call is what it means. No fix: the processes that read the shared module must get another
way to see it (each builds its own on its device, or the module stays on the CPU).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.device_intent import places_on_a_device
from ...semantic.model import ScriptModel, method_name
from ...semantic.node_helpers import dotted
from ...semantic.optimizer_events import moves_to_a_device
from ..base import Finding, Severity

SHARING = frozenset({"share_memory", "share_memory_"})
MANUAL = (
    "Keep the shared copy on the CPU (share it before moving, and move a copy in each "
    "process), or let each process build its own module on its own XLA device."
)


def _moved_paths(model: ScriptModel) -> set[str]:
    """Paths moved to a device: ``x.cuda()`` / ``x.to(dev)`` as a statement, or assigned
    from such a move (``net = Net().to(device)``)."""
    moved: set[str] = set()
    for call in model.method_calls("cuda", "to"):
        if not moves_to_a_device(model, call):
            continue
        receiver = dotted(call.func.value)  # type: ignore[attr-defined]
        if receiver is not None:
            moved.add(receiver)
        stmt = model.parent(call)
        if isinstance(stmt, ast.Assign) and stmt.value is call:
            moved.update(p for p in map(dotted, stmt.targets) if p is not None)
    return moved


def shared_memory_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    calls = [c for c in model.method_calls(*SHARING) if not c.args and not c.keywords]
    if not calls or not places_on_a_device(model):
        return
    moved = _moved_paths(model)
    for call in calls:
        receiver = dotted(call.func.value)  # type: ignore[attr-defined]
        if receiver is None:
            continue
        shown = f"{receiver}.{method_name(call)}()"
        known = receiver in moved
        yield Finding(
            code,
            f"{shown} puts tensors in shared memory for torch.multiprocessing: "
            + (
                f"`{receiver}` is moved to a device in this script; "
                if known
                else f"if `{receiver}` is on the device, "
            )
            + "on CUDA the call does nothing, on XLA it raises "
            '"_share_fd_: only available on CPU"',
            model.span(call),
            Severity.WARNING if known else Severity.INFORMATION,
            manual=MANUAL,
        )
