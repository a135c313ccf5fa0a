"""What CUDA queries do on a host without CUDA (an XLA host): some answer zero, some raise
("Found no NVIDIA driver", measured on torch 2.9)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import ScriptModel

ZERO_ON_XLA = frozenset({"torch.cuda.device_count", "torch.accelerator.device_count"})
RAISE_ON_XLA = frozenset(
    {
        "torch.cuda.current_device",
        "torch.cuda.get_device_name",
        "torch.cuda.get_device_properties",
        "torch.cuda.get_device_capability",
        "torch.cuda.set_device",
        "torch.accelerator.current_device_index",
        "torch.accelerator.set_device_index",
        "torch.accelerator.set_device_idx",
    }
)


def query_failure(model: ScriptModel, stmts: list[ast.stmt]) -> str | None:
    """What the first CUDA query of ``stmts`` does on an XLA host when that is an error: a
    raising query, or a zero count used as a divisor (held-out 77, WaveRNN's
    ``batch_size % torch.cuda.device_count()``: ZeroDivisionError). None otherwise."""
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and model.call_name(node) in RAISE_ON_XLA:
                return f"`{model.segment(node)[:50]}` raises there (no NVIDIA driver)"
            if (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Mod | ast.Div | ast.FloorDiv)
                and isinstance(node.right, ast.Call)
                and model.call_name(node.right) in ZERO_ON_XLA
            ):
                return (
                    f"`{model.segment(node)[:60]}` raises ZeroDivisionError there "
                    f"({model.segment(node.right.func)}() is 0)"
                )
    return None
