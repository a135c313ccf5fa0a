"""A module moved to the CPU to save its state (XLA108, held-out 28: SPADE's
``torch.save(net.cpu().state_dict(), path)`` then ``net.cuda()`` in ``save_network``).

On CUDA ``net.cpu()`` and ``net.cuda()`` keep the module's Parameter objects (the tensors are
swapped in place), so the optimizer built from them goes on training the model. On XLA a
move between the XLA device and the CPU replaces them (the same mechanism XLA109 is about):
after the first save the optimizer steps the old parameters and the model stops learning, with
no error. ``xm.save`` copies the state to the CPU without moving the module, so the fix saves
``net.state_dict()`` instead; it is a review, since the module then stays on the XLA device
after the save where the original left it on the CPU (until its own ``.cuda()``).
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, const_str, method_name

MOVED_MESSAGE = (
    "`{call}` moves the module itself to the CPU: on XLA that replaces its parameters, so an "
    "optimizer built before keeps stepping the old ones after this save and the model stops "
    "training, silently; xm.save copies the state to the CPU without moving the module"
)
MOVED_REASON = (
    "{module} then stays on the XLA device after the save (the original moved it to the CPU, "
    "and back with its own `.cuda()` if it has one): code after this line that expects it on "
    "the CPU needs a look"
)


def module_moved_to_cpu(model: ScriptModel, obj: ast.AST | None) -> ast.Call | None:
    """The ``net.cpu()`` (or ``net.to("cpu")``) call in ``net.cpu().state_dict()``."""
    if not (isinstance(obj, ast.Call) and method_name(obj) == "state_dict"):
        return None
    inner = obj.func.value if isinstance(obj.func, ast.Attribute) else None
    if not isinstance(inner, ast.Call) or not isinstance(inner.func, ast.Attribute):
        return None
    name = method_name(inner)
    to_cpu = name == "to" and len(inner.args) == 1 and const_str(inner.args[0]) == "cpu"
    if (name == "cpu" and not inner.args and not inner.keywords) or to_cpu:
        return inner
    return None


def nothing_trains_after(model: ScriptModel, save: ast.Call) -> bool:
    """The save of ``net.cpu().state_dict()`` is the script's last word on the model: at the
    top level or in a plain function, in no loop, with no training loop after it there
    (HTR-best-practices' final save, held-out 86). Its file holds CPU tensors and no
    optimizer steps the moved module again: nothing to convert. A method or a save in a loop
    may run between steps."""
    fn = model.enclosing_function(save)
    if fn is not None and isinstance(model.parent(fn), ast.ClassDef):
        return False
    scope = fn or model.tree
    for a in model.ancestors(save):
        if a is scope:
            break
        if isinstance(a, ast.For | ast.AsyncFor | ast.While):
            return False
    for loop in model.training_loops:
        node = loop.node
        if (
            getattr(node, "lineno", 0) > save.lineno
            and (model.enclosing_function(node) or model.tree) is scope
        ):
            return False
    if fn is not None:
        # Called only here, outside loops (a function nobody here calls may be a trainer's
        # ``save_network``, run between epochs: SPADE, held-out 28).
        callers = [c for c in model.calls if model.steps.callee(c) is fn]
        return bool(callers) and not any(
            isinstance(a, ast.For | ast.AsyncFor | ast.While)
            for c in callers
            for a in model.ancestors(c)
        )
    return True
