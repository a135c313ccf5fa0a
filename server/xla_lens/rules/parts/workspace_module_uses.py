"""What a workspace function does with a module handed to it (XLA110 / XLA205's question
"does DataParallel's or DDP's input placement matter past this call?", held-out 26:
SimCLR's ``save_model(args, model, optimizer)`` in model.py, which only reads state dicts).

A module is run through its forward only by calling it (``model(x)``) or by handing it on;
reading attributes of it (``model.state_dict()``, ``model.module.state_dict()``,
``model.parameters()``) or testing its type (``isinstance(model, nn.DataParallel)``) runs no
forward, so what the wrapper did to forward inputs cannot matter inside. The module file is
read, never imported.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel
from ...semantic.workspace_calls import helper_target, parsed_module
from .helper_reads import sibling_model


def never_runs_forward(model: ScriptModel, call: ast.Call, use: ast.expr) -> bool:
    """Whether the workspace function ``call`` runs surely never calls (or hands on) the
    module passed as ``use``."""
    target = helper_target(model, call)
    parsed = parsed_module(target.path) if target is not None else None
    fn = parsed.functions.get(target.function) if parsed and target else None
    if fn is None or parsed is None:
        return False
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    name = next((params[i] for i, a in enumerate(call.args) if a is use and i < len(params)), None)
    if name is None:
        name = next((k.arg for k in call.keywords if k.value is use), None)
    if name is None or fn.args.vararg or fn.args.kwarg:
        return False
    sibling = sibling_model(parsed)
    loads = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    ]
    stores = [
        n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and n.ctx != ast.Load()
    ]
    if any(isinstance(n.ctx, ast.Store) for n in stores):
        return False
    for n in loads:
        parent = sibling.parent(n)
        if isinstance(parent, ast.Attribute) and parent.value is n:
            continue
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id in TYPE_TESTS
            and parent.args
            and parent.args[0] is n
        ):
            continue
        if _returned_and_dropped(model, sibling, call, n):
            continue
        return False
    return True


# Calls that look at what a module is, not run it: ``isinstance(model, DDP)``,
# ``hasattr(model, "module")`` (vits' ``utils.load_checkpoint``, held-out 37).
TYPE_TESTS = frozenset({"isinstance", "hasattr", "getattr", "type"})


def _returned_and_dropped(
    model: ScriptModel, sibling: ScriptModel, call: ast.Call, load: ast.Name
) -> bool:
    """``return model, optimizer, lr, it`` where the caller drops that element
    (``_, _, _, epoch = utils.load_checkpoint(path, net, opt)``): the module goes nowhere."""
    parent = sibling.parent(load)
    if not (isinstance(parent, ast.Tuple) and isinstance(sibling.parent(parent), ast.Return)):
        return False
    index = next(i for i, e in enumerate(parent.elts) if e is load)
    stmt = model.parent(call)
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1):
        return False
    target = stmt.targets[0]
    if not isinstance(target, ast.Tuple) or len(target.elts) != len(parent.elts):
        return False
    dropped = target.elts[index]
    return isinstance(dropped, ast.Name) and dropped.id == "_"
