"""What ``xm.save`` gives back differently from ``torch.save`` (XLA108's review): it rebuilds
every container it saves as a plain one (measured on torch_xla 2.9: an ``OrderedDict`` state
dict, a ``collections.Counter`` and a ``defaultdict`` load back as ``dict``, a tuple as a
list). Most checkpoints do not care; two kinds do:

- a ``MultiStepLR`` state: its ``milestones`` are a ``Counter``, and a resumed scheduler
  stepped with an epoch (``scheduler.step(epoch)``, the closed form) calls
  ``milestones.elements()`` and raises AttributeError (3D-ResNets' checkpoint, held-out 85);
- a ``Counter`` or ``defaultdict`` the script saves itself: read back, a missing key raises
  KeyError where it counted zero or built a default.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, method_name

MULTISTEP = frozenset({"torch.optim.lr_scheduler.MultiStepLR"})
COUNTING = frozenset({"collections.Counter", "collections.defaultdict"})


def rebuilt_container_reason(model: ScriptModel, saved: list[ast.AST]) -> str:
    """Why the plain containers ``xm.save`` writes could change the resumed run ("" when
    nothing saved is such a container). ``saved``: the saved object and the values it is
    built from (its assignments, the entries stored into it)."""
    multistep = next(model.calls_to(*MULTISTEP), None) is not None
    for value in saved:
        for n in ast.walk(value):
            if not isinstance(n, ast.Call):
                continue
            if multistep and method_name(n) == "state_dict" and _scheduler_receiver(n):
                return (
                    f"the checkpoint holds `{model.segment(n)}`, and this script builds a "
                    "MultiStepLR, whose milestones are a collections.Counter: xm.save rebuilds "
                    "the containers it saves as plain dicts (measured on torch_xla 2.9), so a "
                    "resumed scheduler stepped with an epoch (`scheduler.step(epoch)`) raises "
                    "AttributeError ('dict' object has no attribute 'elements'); keep "
                    "torch.save for that entry, or check the resumed scheduler only calls "
                    "step()"
                )
            if model.call_name(n) in COUNTING:
                return (
                    f"the checkpoint holds `{model.segment(n)[:40]}`: xm.save rebuilds the "
                    "containers it saves as plain dicts (measured on torch_xla 2.9), so what is "
                    "loaded back has no default for a missing key (KeyError where it counted "
                    "zero); keep torch.save for that entry"
                )
    return ""


def _scheduler_receiver(call: ast.Call) -> bool:
    recv = call.func.value if isinstance(call.func, ast.Attribute) else None
    while isinstance(recv, ast.Attribute):
        if "sched" in recv.attr.lower():
            return True
        recv = recv.value
    return isinstance(recv, ast.Name) and "sched" in recv.id.lower()


__all__ = ["rebuilt_container_reason"]
