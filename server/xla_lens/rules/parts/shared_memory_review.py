"""XLA101: device fixes wait for review in a script that shares memory across processes.

``module.share_memory()`` / ``tensor.share_memory_()`` (Hogwild training: one model, many
``torch.multiprocessing`` workers) works on the CPU and is a no-op on CUDA, but on XLA
tensors it raises "_share_fd_: only available on CPU" (measured, torch_xla 2.9). On an XLA
host a CUDA-or-CPU picker gives the CPU, so such a script runs there as written; the device
fix moves its modules to the XLA device and the sharing call then fails
(Popular-RL-Algorithms' PPO, held-out 71). Which modules end up shared is not always visible
(the PPO class builds them on the picked device), so every device fix of such a script is a
review, naming the calls; XLA405 says the same at each call.
"""

from __future__ import annotations

from dataclasses import replace

from ...semantic.advice import Advice
from ...semantic.device_intent import places_on_a_device
from ...semantic.line_refs import line_refs
from ...semantic.model import ScriptModel
from .shared_memory_moves import SHARING


def sharing_reason(model: ScriptModel) -> str:
    """Why device fixes need review here ("" when the script shares no memory)."""
    calls = [c for c in model.method_calls(*SHARING) if not c.args and not c.keywords]
    if not calls or not places_on_a_device(model):
        return ""
    first = model.segment(calls[0])
    return (
        f"the script shares modules or tensors across processes (`{first}`, line "
        f'{line_refs(c.lineno for c in calls[:4])}): on XLA share_memory raises "_share_fd_: '
        'only available on CPU" for what this fix puts on the device, while as written an '
        "XLA host runs it on the CPU; keep the shared copies on the CPU, or let each process "
        "build its own on its XLA device"
    )


def review_when_sharing(model: ScriptModel, advice: list[Advice]) -> list[Advice]:
    reason = sharing_reason(model)
    if not reason:
        return advice
    out = []
    for a in advice:
        if a.fix is not None and a.fix.safe:
            fix = replace(a.fix, safe=False, review_reason=reason)
            a = replace(a, message=f"{a.message} (fix needs review: {reason})", fix=fix)
        out.append(a)
    return out
