"""A training loop that moves some fields of its batch to the device and hands another to the
model unmoved (XLA117):

    for i, (inputs, targets) in enumerate(data_loader):
        targets = targets.to(device, non_blocking=True)
        outputs = model(inputs)                 # nn.DataParallel / DDP(device_ids) moved it

On CUDA the wrapper scattered the CPU batch onto the GPUs inside ``forward``; on XLA there is no
DataParallel and DDP without ``device_ids`` moves nothing, so the model on the XLA device gets a
CPU tensor ("Expected XLA tensor"; held-out 17, 3D-ResNets training.py and validation.py, where
the wrapper is built in another module). Only the model call's first positional argument is
judged: a later one may be a batch of strings (BLIP's captions), which ``.to()`` would break.

The fix moves that argument where the loop moves the other field (the same device expression,
in the same loop): the wrapper on CUDA scattered it from wherever it was, and on XLA the model's
device is where the loss already meets the moved field. Other uses of the name are untouched.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from dataclasses import dataclass

from ...semantic.loaders import Source, classify, creates_xla_loader
from ...semantic.model import ScriptModel, method_name
from ...semantic.node_helpers import dotted
from .ddp_input_placement import names_a_device
from .discarded_batches import batch_target, rebound_in_body

MOVES = frozenset({"to", "cuda"})


@dataclass(frozen=True)
class UnmovedField:
    arg: ast.Name  # the model call's first argument
    call: ast.Call  # the model call
    moved: str  # the field the loop does move
    device: str  # the device expression it moves it with ("" for .cuda())


def unmoved_batch_fields(model: ScriptModel, loops: list[ast.AST]) -> Iterator[UnmovedField]:
    """``loops``: the training and evaluation loops (their ``for`` statements)."""
    seen: set[int] = set()
    for node in loops:
        if not isinstance(node, ast.For | ast.AsyncFor) or id(node) in seen:
            continue
        seen.add(id(node))
        if not isinstance(node, ast.For | ast.AsyncFor):
            continue
        fields = _fields(node)
        if len(fields) < 2:
            continue
        moves = _moves(node, fields)
        if not moves or len(moves) == len(fields):
            continue
        source = classify(model, node.iter)
        if source is Source.XLA or (source is not Source.PLAIN and creates_xla_loader(model)):
            continue
        moved_name, device = next(iter(moves.items()))
        for call in _model_calls(model, node):
            first = call.args[0]
            if not isinstance(first, ast.Name) or first.id in moves:
                continue
            if (first.id in fields and not rebound_in_body(node, first.id)) or _variable_of(
                model, node, first.id, fields, moves
            ):
                yield UnmovedField(first, call, moved_name, device)


VARIABLES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


def _variable_of(
    model: ScriptModel, loop: ast.For | ast.AsyncFor, name: str, fields: set[str], moves: dict
) -> bool:
    """``name`` is bound once in the loop, to ``torch.autograd.Variable(field)`` of an unmoved
    field (TSM's ``input_var = torch.autograd.Variable(input)``, held-out 120): since torch 0.4
    ``Variable(t)`` returns ``t`` itself, on whatever device it is."""
    stores = [
        n
        for stmt in loop.body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
    ]
    if len(stores) != 1:
        return False
    assign = model.parent(stores[0])
    if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1):
        return False
    value = assign.value
    return (
        assign.targets[0] is stores[0]
        and isinstance(value, ast.Call)
        and model.call_name(value) in VARIABLES
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], ast.Name)
        and value.args[0].id in fields
        and value.args[0].id not in moves
        and not rebound_in_body(loop, value.args[0].id)
    )


def _fields(loop: ast.For | ast.AsyncFor) -> set[str]:
    """The batch's fields: the names of the loop's (tuple) target."""
    target = batch_target(loop)
    if not isinstance(target, ast.Tuple):
        return set()
    return {e.id for e in target.elts if isinstance(e, ast.Name)}


def _moves(loop: ast.For | ast.AsyncFor, fields: set[str]) -> dict[str, str]:
    """Fields the loop moves to a device (``y = y.to(device)``, ``y.cuda()``) → the device
    expression's text ("" for ``.cuda()``)."""
    out: dict[str, str] = {}
    for stmt in loop.body:
        for n in ast.walk(stmt):
            if not (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id in fields
                and n.func.attr in MOVES
            ):
                continue
            if n.func.attr == "to":
                if not names_a_device(n):
                    continue
                device = (
                    n.args[0] if n.args else next(k.value for k in n.keywords if k.arg == "device")
                )
                out.setdefault(n.func.value.id, ast.unparse(device))
            else:
                out.setdefault(n.func.value.id, "")
    return out


def _model_calls(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> Iterator[ast.Call]:
    """Calls of a module object: ``model(x)`` / ``self.model(x)``, not a function of this file,
    a library function or a method (``x.view(...)``), nor a call whose result the loop moves
    itself (``tokenizer(question, return_tensors="pt").to(device)``: ALBEF's VQA, held-out
    84, where ``question`` is a list of strings)."""
    for stmt in loop.body:
        for n in ast.walk(stmt):
            if not isinstance(n, ast.Call) or not n.args or _result_moved(model, n):
                continue
            func = n.func
            if isinstance(func, ast.Name):
                if func.id in model.functions or model.call_name(n) is not None:
                    continue
                if hasattr(builtins, func.id):
                    continue
                yield n
            elif (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and method_name(n) not in _own_methods(model, n)
            ):
                yield n


def _result_moved(model: ScriptModel, call: ast.Call) -> bool:
    parent = model.parent(call)
    return (
        isinstance(parent, ast.Attribute)
        and parent.attr in MOVES
        and isinstance(model.parent(parent), ast.Call)
    )


# Calls on an object that only a module answers: evidence the callee is the model.
MODULE_METHODS = frozenset(
    {"train", "eval", "parameters", "named_parameters", "state_dict", "load_state_dict"}
    | {"zero_grad", "modules", "named_modules", "children", "cuda", "to", "half", "float"}
)


def proven_module(model: ScriptModel, call: ast.Call) -> bool:
    """Whether the script treats the callee of ``call`` as a module elsewhere: ``model.train()``,
    ``model.parameters()``, ``model.to(device)`` on the same name (``self.model`` likewise)."""
    callee = dotted(call.func)
    if callee is None:
        return False
    for other in model.method_calls(*MODULE_METHODS):
        receiver = other.func.value if isinstance(other.func, ast.Attribute) else None
        if receiver is not None and dotted(receiver) == callee:
            return True
    # ``model = torch.nn.DataParallel(model).cuda()``: wrapped or moved where it is bound.
    values = model.assigned_from(callee) if isinstance(call.func, ast.Name) else []
    for value in values:
        while isinstance(value, ast.Call) and method_name(value) in MOVES:
            value = value.func.value  # type: ignore[union-attr]
        if isinstance(value, ast.Call) and (dotted(value.func) or "").endswith(WRAPPERS):
            return True
    return False


WRAPPERS = ("DataParallel", "DistributedDataParallel", "DDP")


def _own_methods(model: ScriptModel, node: ast.AST) -> set[str]:
    cls = next((a for a in model.ancestors(node) if isinstance(a, ast.ClassDef)), None)
    if cls is None:
        return set()
    return {s.name for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}


__all__ = ["UnmovedField", "proven_module", "unmoved_batch_fields"]
