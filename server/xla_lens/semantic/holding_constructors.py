"""A module the script hands to the constructor of a module class that keeps it: pytorch-ddpm's
``GaussianDiffusionTrainer(net_model, beta_1, beta_T, T).to(device)``, whose ``__init__`` runs
``self.model = model`` (held-out 118). ``nn.Module`` registers a module stored on an attribute
as a submodule, so moving the wrapper moves ``net_model`` too: on XLA that makes new Parameter
objects, and an optimizer built from ``net_model.parameters()`` before it keeps the CPU ones
(measured: the weights never change). The class is the script's own or another workspace
module's; read, never imported.
"""

from __future__ import annotations

import ast

from .calls import FunctionNode, class_methods, classes
from .model import ScriptModel, dotted

# How many of the script's own bases are followed to find ``nn.Module``.
MAX_BASES = 4


def held_modules(model: ScriptModel, call: ast.Call) -> list[ast.expr]:
    """The arguments of the constructor ``call`` that its class's ``__init__`` stores on
    ``self`` as they are (``self.model = model``), when the class is a module class; [] when
    the class is unknown or keeps none."""
    memo: dict[int, list[ast.expr]] = model.memo(("holding_constructors",), dict)
    if id(call) not in memo:
        memo[id(call)] = _held(model, call)
    return memo[id(call)]


def _held(model: ScriptModel, call: ast.Call) -> list[ast.expr]:
    init = _module_init(model, call)
    if init is None:
        return []
    stored = _stored_parameters(init)
    if not stored:
        return []
    params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]  # past ``self``
    out: list[ast.expr] = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if i < len(params) and params[i] in stored and dotted(arg) is not None:
            out.append(arg)
    for kw in call.keywords:
        if kw.arg in stored and dotted(kw.value) is not None:
            out.append(kw.value)
    return out


def _module_init(model: ScriptModel, call: ast.Call) -> FunctionNode | None:
    """``__init__`` of the module class ``call`` constructs (the class's own, not inherited)."""
    if isinstance(call.func, ast.Name) and call.func.id in classes(model):
        cls = classes(model)[call.func.id]
        if not _script_module_class(model, cls):
            return None
        return class_methods(cls).get("__init__")
    from . import workspace_classes as wc  # noqa: PLC0415 (the workspace layer imports the model)

    if not isinstance(call.func, ast.Name | ast.Attribute) or wc.unwrapped_call(call) is not call:
        return None  # ``Net(cfg).cuda(rank)``: the arguments are the move's, not Net's
    if wc.call_root(call.func) not in wc.class_roots(model):
        return None
    built = wc.built(model, call)
    if len(built) != 1:
        return None
    chain = wc.chain(built[0])
    if not any(_names_module(b) for c in chain for b in c.node.bases):
        return None
    return class_methods(built[0].node).get("__init__")


def _script_module_class(model: ScriptModel, cls: ast.ClassDef) -> bool:
    own = classes(model)
    seen: list[ast.ClassDef] = []
    frontier = [cls]
    for _ in range(MAX_BASES):
        following = []
        for c in frontier:
            for base in c.bases:
                if _names_module(base):
                    return True
                if isinstance(base, ast.Name) and base.id in own and own[base.id] not in seen:
                    seen.append(own[base.id])
                    following.append(own[base.id])
        frontier = following
    return False


def _names_module(base: ast.expr) -> bool:
    """``nn.Module``, ``torch.nn.Module``, ``Module``."""
    name = dotted(base) or ""
    return name == "Module" or name.endswith(".Module")


def _stored_parameters(init: FunctionNode) -> set[str]:
    """Parameters ``__init__`` assigns to an attribute of ``self`` as they are, and never
    rebinds."""
    params = {a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)}
    params.discard("self")
    stored: set[str] = set()
    rebound: set[str] = set()
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            if node.value.id in params and any(
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
                for t in node.targets
            ):
                stored.add(node.value.id)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            rebound.add(node.id)
    return stored - rebound
