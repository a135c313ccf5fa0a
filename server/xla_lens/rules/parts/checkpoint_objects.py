"""What a checkpoint holds that ``xm.save`` leaves on the device (XLA108).

``xm.save`` copies to the CPU only values whose type is exactly ``torch.Tensor`` (its
``select_fn`` is ``type(v) == torch.Tensor``); it walks dicts, lists, tuples and objects'
``__dict__``. A module's ``nn.Parameter``s, an optimizer's (or its scheduler's) parameter
lists and a ``state_dict(keep_vars=True)`` therefore stay XLA tensors in the file (verified
on torch_xla 2.9, PJRT CPU): ``torch.save(dict(net=net, opt=opt.state_dict()))`` swapped to
``xm.save`` is no CPU checkpoint. A CPU copy (``copy.deepcopy(net).cpu()``) is fine.
XLA401 asks ``object_kind`` too: the ``.cpu()`` of a module is a model snapshot, not a
tensor read.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...semantic.calls import classes
from ...semantic.model import ScriptModel, dotted, keyword, method_name, receiver
from ...semantic.params import argument_values, parameter_of
from ...semantic.rank_guards import attribute_values
from ...semantic.workspace_classes import (
    call_root,
    chain,
    class_reference,
    class_roots,
    script_module,
)

# Methods only a module has (an optimizer has state_dict/zero_grad too, a tensor has .to).
MODULE_METHODS = frozenset(
    {"parameters", "named_parameters", "train", "eval", "modules", "named_modules", "buffers"}
)
PLACEMENT_METHODS = frozenset({"to", "cuda"})
# A module method that returns the module itself: ``net.train().requires_grad_(True)``.
SELF_RETURNING = frozenset(
    {"train", "eval", "requires_grad_", "to", "cuda", "half", "float", "bfloat16", "double"}
)
MODULE, OPTIMIZER, SCHEDULER, PARAMETERS = "module", "optimizer", "scheduler", "parameters"


@dataclass(frozen=True)
class Held:
    """A value in a checkpoint whose tensors ``xm.save`` leaves on the device."""

    kind: str  # MODULE, OPTIMIZER, SCHEDULER or PARAMETERS
    node: ast.expr
    text: str


def _receiver_methods(model: ScriptModel) -> dict[str, set[str]]:
    """``model`` / ``self.net`` → the methods called on it anywhere in the script."""
    out: dict[str, set[str]] = {}
    for call in model.calls:
        base = receiver(call)
        text = dotted(base) if base is not None else None
        if text is not None:
            out.setdefault(text, set()).add(method_name(call) or "")
    return out


def methods_on(model: ScriptModel, text: str) -> set[str]:
    return model.memo(_receiver_methods, lambda: _receiver_methods(model)).get(text, set())


def values_of(model: ScriptModel, node: ast.Name | ast.Attribute) -> list[ast.expr]:
    """What is assigned to a name, or to an attribute chain (``self.net = ...``)."""
    if isinstance(node, ast.Name):
        return model.assigned_from(node.id)
    text = dotted(node)
    table = attribute_values(model)
    return table.get(text, []) if text is not None else []


def placed_module(model: ScriptModel, node: ast.AST | None) -> bool:
    """A module (``.parameters()``, ``.train()``... are called on it) that is moved to a
    device (``.to(...)`` / ``.cuda()`` on it, or it is assigned such a call): after the
    conversion its parameters are XLA tensors."""
    node = copied_from(model, node)
    text = dotted(node) if node is not None else None
    if text is None or not isinstance(node, ast.Name | ast.Attribute):
        return False
    if _ema_of_placed(model, node):
        return True
    if (
        isinstance(node, ast.Attribute)
        and node.attr == "module"
        and placed_module(model, node.value)
    ):
        # ``torch.save(net.module, path)`` of a placed DataParallel/DDP wrapper (held-out 130,
        # pytorch-retinanet): the wrapped model holds the same, placed parameters.
        return True
    methods = methods_on(model, text)
    values = values_of(model, node)
    # A module's methods may all be called in another module (a2c-ppo's PPO takes the
    # policy's parameters in algo/ppo.py): built from a module class says it too.
    if not methods & MODULE_METHODS and not any(
        isinstance(v, ast.Call) and _constructed(model, v) == MODULE for v in values
    ):
        return False
    if methods & PLACEMENT_METHODS:
        return True
    if isinstance(node, ast.Name) and _loaded_onto_device(model, node.id):
        return True
    return any(isinstance(v, ast.Call) and method_name(v) in PLACEMENT_METHODS for v in values)


def _loaded_onto_device(model: ScriptModel, name: str) -> bool:
    """``model, preprocess = clip.load("ViT-L/14", device=device)``: a library loader that
    builds the module on the device it is given (CLIP-fine-tune, held-out 114, then saved the
    whole module with ``torch.save(model, path)``)."""
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        value = node.value
        if not isinstance(value, ast.Call):
            continue
        device = next((k.value for k in value.keywords if k.arg == "device"), None)
        if device is None or (isinstance(device, ast.Constant) and device.value == "cpu"):
            continue
        for target in node.targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            if any(isinstance(t, ast.Name) and t.id == name for t in names):
                return True
    return False


def copied_from(model: ScriptModel, node: ast.AST | None) -> ast.AST | None:
    """``deepcopy(ema.ema).half()`` -> ``ema.ema``: a copy keeps the device of what it copies
    (yolov5's checkpoints, held-out 38)."""
    for _ in range(8):
        if not isinstance(node, ast.Call):
            return node
        if model.call_name(node) == "copy.deepcopy" and len(node.args) == 1:
            node = node.args[0]
        elif method_name(node) in SELF_RETURNING and isinstance(node.func, ast.Attribute):
            if method_name(node) == "to":
                return None  # ``.to(...)`` says where the copy goes: judged as a move elsewhere
            node = node.func.value
        else:
            return node
    return node


def _ema_of_placed(model: ScriptModel, node: ast.AST) -> bool:
    """``ema.ema`` with ``ema = ModelEMA(model)`` (an EMA class, here or in a sibling module,
    given a module the script moves to its device): the averaged copy lives where the model
    does."""
    source = _ema_source(model, node)
    return source is not None and placed_module(model, source)


def _ema_source(model: ScriptModel, node: ast.AST) -> ast.expr | None:
    """The module ``ema = SomeEMA(module, ...)`` was given, for ``ema.<attribute>``."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
        return None
    values = model.assigned_from(node.value.id)
    # ``ema = ModelEMA(model) if RANK in {-1, 0} else None`` (yolov5): either side.
    values += [side for v in values if isinstance(v, ast.IfExp) for side in (v.body, v.orelse)]
    for value in values:
        if not (isinstance(value, ast.Call) and value.args):
            continue
        name = (model.call_name(value) or dotted(value.func) or "").rpartition(".")[2]
        if name.lower().endswith("ema") or name.lower().startswith(("ema", "modelema")):
            return value.args[0]
    return None


def _module_class(model: ScriptModel, call: ast.Call) -> bool:
    """``Net(...)`` of a class of this script that subclasses ``nn.Module``."""
    if not isinstance(call.func, ast.Name):
        return _workspace_module_class(model, call)
    cls = classes(model).get(call.func.id)
    if cls is not None:
        return any(model.qualname(b) == "torch.nn.Module" for b in cls.bases)
    return _workspace_module_class(model, call)


def _workspace_module_class(model: ScriptModel, call: ast.Call) -> bool:
    """``Policy(...)`` of a class of another module of the project that derives from
    ``nn.Module`` (a2c-ppo's ``from a2c_ppo_acktr.model import Policy``)."""
    if call_root(call.func) not in class_roots(model):
        return False
    ref = class_reference(script_module(model), call.func)
    return ref is not None and any(
        (dotted(b) or "").rpartition(".")[2] == "Module" for c in chain(ref) for b in c.node.bases
    )


def _constructed(model: ScriptModel, call: ast.Call) -> str | None:
    name = model.call_name(call) or ""
    if name == "torch.nn.Parameter":
        return PARAMETERS
    if name.startswith("torch.optim.lr_scheduler."):
        return SCHEDULER
    if name.startswith("torch.optim."):
        return OPTIMIZER
    if (
        name.startswith("torch.nn.")
        and not name.startswith(("torch.nn.functional.", "torch.nn.utils.", "torch.nn.init."))
        and name.rpartition(".")[2][:1].isupper()  # a class: nn.Linear, not a function
    ):
        return MODULE
    return MODULE if _module_class(model, call) else None


def _kind_of_call(model: ScriptModel, call: ast.Call, depth: int) -> str | None:
    method = method_name(call)
    if method == "state_dict":
        keep = keyword(call, "keep_vars")
        kept = keep is not None and not (
            isinstance(keep.value, ast.Constant) and keep.value.value is False
        )
        return PARAMETERS if kept else None
    if method == "cpu":
        return None  # a CPU copy: nothing left on the device
    if method == "unwrap_model":
        return MODULE  # accelerator.unwrap_model(model)
    if model.call_name(call) == "copy.deepcopy" and len(call.args) == 1:
        return _kind(model, call.args[0], depth + 1)
    if method in SELF_RETURNING and isinstance(call.func, ast.Attribute):
        if method == "to" and any(
            isinstance(a, ast.Constant) and a.value == "cpu" for a in call.args
        ):
            return None
        base = _kind(model, call.func.value, depth + 1)
        if base is not None:
            return base
    return _constructed(model, call)


def _kind(model: ScriptModel, node: ast.AST, depth: int) -> str | None:
    """What ``node`` is when it is a module, optimizer, scheduler or parameter holder."""
    if depth > 8:  # each link of a chain (``Net().to(d).train()``, a name) is one level
        return None
    if isinstance(node, ast.Call):
        return _kind_of_call(model, node, depth)
    if not isinstance(node, ast.Name | ast.Attribute):
        return None
    if isinstance(node, ast.Attribute) and node.attr == "module":
        return MODULE  # DDP(model).module
    if _ema_source(model, node) is not None:
        return MODULE  # ``ema.ema`` of ``ema = ModelEMA(model)``
    text = dotted(node)
    if text is None:
        return None
    methods = methods_on(model, text)
    if methods & MODULE_METHODS:
        return MODULE
    if {"step", "zero_grad"} <= methods:
        return OPTIMIZER
    for value in values_of(model, node):
        kind = _kind(model, value, depth + 1)
        if kind is not None:
            return kind
    return None


def object_kind(model: ScriptModel, node: ast.AST) -> str | None:
    """MODULE, OPTIMIZER, SCHEDULER or PARAMETERS when ``node`` is provably one (XLA401 asks
    whether a ``.cpu()`` copies a module rather than reads a tensor)."""
    return _kind(model, node, 0)


def held_on_device(model: ScriptModel, node: ast.AST | None, depth: int = 0) -> list[Held]:
    """The values in what ``torch.save`` writes that ``xm.save`` does not move to the CPU:
    dict / ``dict(...)`` / list values, followed through names and a helper's parameter."""
    if node is None or depth > 4:
        return []
    parts: list[ast.expr] = []
    if isinstance(node, ast.Dict):
        parts = list(node.values)
    elif isinstance(node, ast.List | ast.Tuple | ast.Set):
        parts = list(node.elts)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and model.call_name(node) is None
    ):
        parts = [*node.args, *(kw.value for kw in node.keywords)]
    elif isinstance(node, ast.Name):
        param = parameter_of(model, node)
        values = argument_values(model, *param) if param is not None else []
        if param is None:
            kind = _kind(model, node, 0)
            if kind is not None:
                return [Held(kind, node, model.segment(node))]
            values = model.assigned_from(node.id)
        return _unique([h for v in values for h in held_on_device(model, v, depth + 1)])
    else:
        kind = _kind(model, node, 0) if isinstance(node, ast.expr) else None
        return [Held(kind, node, model.segment(node))] if kind is not None else []  # type: ignore[arg-type]
    return _unique([h for p in parts for h in held_on_device(model, p, depth + 1)])


def _unique(held: list[Held]) -> list[Held]:
    seen: dict[str, Held] = {}
    for h in held:
        seen.setdefault(h.text, h)
    return list(seen.values())


def describe(held: list[Held]) -> str:
    """```net` (a module)`, ```optimizer` (an optimizer)`... for a message."""
    words = {
        MODULE: "a module",
        OPTIMIZER: "an optimizer",
        SCHEDULER: "a scheduler, which holds its optimizer",
        PARAMETERS: "nn.Parameter values",
    }
    return ", ".join(f"`{h.text}` ({words[h.kind]})" for h in held)


def advice(held: list[Held]) -> str:
    """What to save instead of each held value."""
    out = []
    for h in held:
        if h.kind == PARAMETERS and "keep_vars" in h.text:
            out.append(f"drop keep_vars from `{h.text}`")
        elif h.kind == PARAMETERS:
            out.append(f"save `{h.text}.detach()` (a plain tensor)")
        elif h.kind == MODULE:
            out.append(
                f"save `{h.text}.state_dict()` (loaded with load_state_dict) or a CPU copy "
                f"`copy.deepcopy({h.text}).cpu()`"
            )
        else:
            out.append(f"save `{h.text}.state_dict()` (loaded with load_state_dict)")
    return "; ".join(out)
