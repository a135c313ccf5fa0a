"""Batch fields an evaluation loop never moves: CPU tensors, whose host reads sync nothing.

    for image, ids in loader:                 # a plain DataLoader
        image = image.to(device)              # only the images go to the device
        for caption, uid in zip(captions, ids):
            out.append({"id": uid.item()})    # a CPU tensor: no XLA graph runs for it

Held-out 17 (BLIP's evaluate): XLA401 called ``img_id.item()`` a device read. A field is on the
CPU when the loop's loader is not an XLA loader (``pl.MpDeviceLoader`` moves whole batches) and
the loop body never rebinds the field (``ids = ids.to(device)``); ``zip`` and ``enumerate`` pass
the field's elements through.
"""

from __future__ import annotations

import ast

from ...semantic.loaders import Source, classify, creates_xla_loader
from ...semantic.model import ScriptModel
from .discarded_batches import rebound_in_body

MAX_HOPS = 3


MOVES = frozenset({"to", "cuda", "xla"})


def reads_cpu_loader_field(
    model: ScriptModel, loop: ast.For | ast.AsyncFor, read: ast.AST, *, computed: bool = False
) -> bool:
    """Whether the host read ``read`` (``x.item()``, ``int(x)``) inside ``loop`` reads a
    field of ``loop``'s batch that stays on the CPU. ``computed``: also a value computed from
    the field by its own methods (``images.max().item()``, held-out 51's minimal-diffusion
    asserting its pixel range), read before the loop body binds the field again (its move
    to the device comes after)."""
    if not isinstance(read, ast.Call):
        return False
    if isinstance(read.func, ast.Attribute):
        value = read.func.value
    elif len(read.args) == 1:
        value = read.args[0]
    else:
        return False
    if not computed:
        return _field(model, loop, value, MAX_HOPS)
    while isinstance(value, ast.Call | ast.Attribute | ast.Subscript):
        if isinstance(value, ast.Call):
            if not isinstance(value.func, ast.Attribute) or value.func.attr in MOVES:
                return False
            value = value.func.value
        else:
            value = value.value
    if not isinstance(value, ast.Name) or value.id not in _target_names(loop.target):
        return False
    if not _read_before_rebinding(model, loop, read, value.id):
        return False
    if not _moves_an_element(loop):
        return False  # nothing moved element by element: the batch may be anywhere
    source = classify(model, loop.iter)
    plain = source is Source.PLAIN or (source is Source.UNKNOWN and not creates_xla_loader(model))
    return plain and _plain_unpacking(loop, value.id)


def _moves_an_element(loop: ast.For | ast.AsyncFor) -> bool:
    """``image.to(device)`` of a batch field somewhere in the loop: the script places its
    batch itself, so the loader hands CPU tensors."""
    names = _target_names(loop.target)
    for node in ast.walk(loop):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MOVES
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in names
        ):
            return True
    return False


def _read_before_rebinding(
    model: ScriptModel, loop: ast.For | ast.AsyncFor, read: ast.AST, name: str
) -> bool:
    """``read`` sits in a statement of the loop body that comes before every statement of the
    body binding ``name`` (straight-line order at the body's top level)."""
    top = next((s for s in loop.body if any(n is read for n in ast.walk(s))), None)
    if top is None:
        return False
    index = loop.body.index(top)
    for i, stmt in enumerate(loop.body):
        binds = any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for n in ast.walk(stmt)
        )
        if binds and (i < index or (i == index and not _read_in_value(stmt, read))):
            return False
    return True


def _read_in_value(stmt: ast.stmt, read: ast.AST) -> bool:
    """``points = points.numpy()`` (Pointnet2's classification loop, held-out 173): the value
    is read before the statement binds the name again."""
    if not isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign) or stmt.value is None:
        return False
    return any(n is read for n in ast.walk(stmt.value))


def _field(model: ScriptModel, loop: ast.For | ast.AsyncFor, expr: ast.AST, hops: int) -> bool:
    if hops < 0 or not isinstance(expr, ast.Name):
        return False
    binder = next(
        (
            a
            for a in model.ancestors(expr)
            if isinstance(a, ast.For | ast.AsyncFor) and expr.id in _target_names(a.target)
        ),
        None,
    )
    if binder is None or rebound_in_body(binder, expr.id):
        return False
    if binder is loop:
        source = classify(model, loop.iter)
        # A loader handed in may be an MpDeviceLoader only where the file makes one.
        plain = source is Source.PLAIN or (
            source is Source.UNKNOWN and not creates_xla_loader(model)
        )
        return plain and _plain_unpacking(loop, expr.id)
    source = _zipped_source(binder, expr.id)
    return source is not None and _field(model, loop, source, hops - 1)


def _target_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _plain_unpacking(loop: ast.For | ast.AsyncFor, name: str) -> bool:
    """``for a, b in loader`` / ``for i, (a, b) in enumerate(loader)``: ``name`` is one field."""
    target = loop.target
    if isinstance(target, ast.Tuple) and any(
        isinstance(e, ast.Name) and e.id == name for e in target.elts
    ):
        return True
    return (
        isinstance(target, ast.Tuple)
        and len(target.elts) == 2
        and isinstance(target.elts[1], ast.Tuple)
        and any(isinstance(e, ast.Name) and e.id == name for e in target.elts[1].elts)
    )


def _zipped_source(loop: ast.For | ast.AsyncFor, name: str) -> ast.expr | None:
    """``for c, u in zip(captions, ids)``: ``u`` comes from ``ids``."""
    it, target = loop.iter, loop.target
    if not (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "zip"
        and isinstance(target, ast.Tuple)
        and len(target.elts) == len(it.args)
    ):
        return None
    for element, source in zip(target.elts, it.args, strict=True):
        if isinstance(element, ast.Name) and element.id == name:
            return source
    return None


__all__ = ["reads_cpu_loader_field"]
