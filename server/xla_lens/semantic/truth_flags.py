"""A name that looks like a CUDA index but is used only as a switch.

``gpu = args.gpu`` reads like ``args.gpu`` of the DDP examples (an int device index), but
LSTMAD's ``--gpu`` is ``action="store_true"`` in a sibling module, and the function only
tests it (``if gpu:``) and hands it on (``predict(..., gpu=gpu)``) (held-out 94). Read as a
device number, the XLA device in its place makes every ``if gpu:`` true and hands a device
object to helpers that test it too. A name no use of which places anything is a switch, not
an index, whatever it is called.
"""

from __future__ import annotations

import ast

from .model import ScriptModel, method_name

# Calls whose argument is a device (an index passed there makes the name an index).
DEVICE_TAKERS = frozenset({"cuda", "to", "set_device", "device", "device_count"})
TESTS = (ast.If, ast.IfExp, ast.While, ast.Assert)


def used_only_as_switch(model: ScriptModel, assign: ast.AST, name: str) -> bool:
    """Every read of ``name`` in the scope ``assign`` binds it in is a truth test (at least
    one) or an argument handed to a call that takes no device."""
    scope = model.enclosing_function(assign) or model.tree
    tested = False
    for node in model.walk_scope(scope):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = model.parent(node)
        while isinstance(parent, ast.UnaryOp | ast.BoolOp):
            parent = model.parent(parent)
        if isinstance(parent, TESTS) and _is_test_of(model, parent, node):
            tested = True
            continue
        if isinstance(parent, ast.keyword):
            parent = model.parent(parent)
        if isinstance(parent, ast.Call) and parent.func is not node:
            called = method_name(parent) or ""
            qualified = (model.call_name(parent) or "").rpartition(".")[2]
            if called not in DEVICE_TAKERS and qualified not in DEVICE_TAKERS:
                continue
        return False
    return tested


def _is_test_of(model: ScriptModel, statement: ast.AST, node: ast.AST) -> bool:
    test = getattr(statement, "test", None)
    return test is not None and any(n is node for n in ast.walk(test))
