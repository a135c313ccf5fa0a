"""A step sync for a script that switches on torch_xla's availability (held-out 15, SimCSE's
copied HF training loop: ``if is_torch_tpu_available(): import torch_xla.core.xla_model as
xm`` at the top, ``if is_torch_tpu_available(): ...`` around every XLA call). An unconditional
``torch_xla.sync()`` would make the GPU mode import torch_xla; the script's own way keeps both
modes: ``if is_torch_tpu_available(): xm.mark_step()``, with the ``xm`` it imports under that
same test. XLA107's fix is rewritten so (its safety otherwise as the rule decided): on XLA the test is
True and ``mark_step`` is the sync; elsewhere nothing runs, so the XLA/CUDA switch's "this code
serves both modes" review does not apply to it.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ...semantic.model import ScriptModel
from ...semantic.xla_branches import TORCH_XLA_AVAILABILITY
from ..base import AddImport, AppendToBody, Finding, InsertAfter, InsertBefore

SYNC_RULE = "XLA107"
SYNC_CODE = "torch_xla.sync()"
GUARDED_TITLE = ".mark_step() under `if "
XM = "torch_xla.core.xla_model"


def _guarded_xm(model: ScriptModel) -> tuple[str, str] | None:
    """(the availability test's text, the alias of xla_model imported under it) from a
    module-level ``if is_torch_xla_available(): import torch_xla.core.xla_model as xm``."""
    # Asked per XLA107 finding: a scan of the module per finding grew with the square of
    # the file's size.
    return model.memo(_guarded_xm, lambda: _find_guarded_xm(model))


def _find_guarded_xm(model: ScriptModel) -> tuple[str, str] | None:
    for stmt in model.tree.body:
        if not (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Call)):
            continue
        func = stmt.test.func
        name = (
            func.id
            if isinstance(func, ast.Name)
            else func.attr
            if isinstance(func, ast.Attribute)
            else ""
        )
        if name not in TORCH_XLA_AVAILABILITY or stmt.test.args or stmt.test.keywords:
            continue
        for inner in stmt.body:
            if isinstance(inner, ast.Import):
                for alias in inner.names:
                    if alias.name == XM and alias.asname:
                        return model.segment(stmt.test), alias.asname
    return None


def guarded_sync(model: ScriptModel, f: Finding) -> Finding | None:
    """XLA107's finding with its sync written the script's way, or None when that is not
    possible here (no such switch and import, or a fix of another shape)."""
    if f.code != SYNC_RULE or f.fix is None or is_guarded_sync(f):
        return None
    found = _guarded_xm(model)
    if found is None:
        return None
    test, xm = found
    code = f"if {test}:\n    {xm}.mark_step()"
    ops = []
    for op in f.fix.ops:
        if isinstance(op, AddImport):
            continue
        if isinstance(op, InsertBefore | InsertAfter | AppendToBody) and op.code == SYNC_CODE:
            ops.append(replace(op, code=code))
        else:
            return None
    title = f.fix.title.replace(SYNC_CODE, f"{xm}.mark_step() under `if {test}:`")
    return replace(f, fix=replace(f.fix, title=title, ops=tuple(ops)))


def is_guarded_sync(f: Finding) -> bool:
    return f.code == SYNC_RULE and f.fix is not None and GUARDED_TITLE in f.fix.title
