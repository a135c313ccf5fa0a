"""XLA402: a device tensor written at a Python int that moves on every call, the replay
buffer of reinforcement learning (``self.s[self.ptr] = s`` then ``self.ptr = (self.ptr + 1) %
self.max_size``; DRL-Pytorch's DQN, held-out 71).

XLA bakes a Python int index into the graph it traces, so every new value of the pointer is a
new graph to compile: measured on PJRT CPU (a fresh process each), twelve writes at positions
0..11 with a sync after each compiled twelve graphs, and so did a 0-d device-tensor index
(``buf[torch.tensor(ptr, device=d)] = v``); a one-element device index
(``buf.index_copy_(0, torch.tensor([ptr], device=d), v.unsqueeze(0))``, or
``buf[torch.tensor([ptr], device=d)] = v.unsqueeze(0)``) compiled one. A buffer of a million
rows may compile up to a million times before the pointer wraps. Advice only: the rewrite
touches every write of the buffer, and a CPU buffer with the sampled batch moved to the device
is often the better design.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.device_intent import places_on_a_device
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, const_str
from ...semantic.node_helpers import dotted, method_name
from ..base import Finding, Severity

FACTORIES = frozenset(
    f"torch.{n}" for n in ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "tensor")
)
MANUAL = (
    "Write through a one-element device index so the graph stays the same for every position: "
    "`buf.index_copy_(0, torch.tensor([ptr], device=buf.device), v.unsqueeze(0))` (a 0-d "
    "index, `buf[torch.tensor(ptr, device=...)]`, still compiles per position, measured), or "
    "keep the buffer on the CPU and move only the sampled batch to the device."
)


def _device_buffers(model: ScriptModel) -> set[str]:
    """Paths bound to a tensor built on a device (``torch.zeros(..., device=self.dvc)``) or
    moved there (``.to(device)`` / ``.cuda()``), a CPU device excluded."""
    out: set[str] = set()
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        value = node.value
        if not isinstance(value, ast.Call) or len(node.targets) != 1:
            continue
        path = dotted(node.targets[0])
        if path is None:
            continue
        device = next((k.value for k in value.keywords if k.arg == "device"), None)
        if model.call_name(value) in FACTORIES and device is not None:
            if const_str(device) != "cpu":
                out.add(path)
        elif method_name(value) in {"to", "cuda"} and isinstance(value.func, ast.Attribute):
            args = [*value.args, *(k.value for k in value.keywords if k.arg == "device")]
            if method_name(value) == "cuda" or (args and const_str(args[0]) != "cpu"):
                out.add(path)
    return out


def _counters(model: ScriptModel) -> dict[str, ast.stmt]:
    """Paths stepped by one (``p += 1``, ``p = p + 1``, ``p = (p + 1) % n``) -> the step."""
    out: dict[str, ast.stmt] = {}
    for node in model.nodes_of(ast.AugAssign, ast.Assign):
        if isinstance(node, ast.AugAssign):
            path = dotted(node.target)
            if path and isinstance(node.op, ast.Add) and isinstance(node.value, ast.Constant):
                out.setdefault(path, node)
            continue
        assert isinstance(node, ast.Assign)
        if len(node.targets) != 1 or (path := dotted(node.targets[0])) is None:
            continue
        value = node.value
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod):
            value = value.left
        if (
            isinstance(value, ast.BinOp)
            and isinstance(value.op, ast.Add)
            and dotted(value.left) == path
            and isinstance(value.right, ast.Constant)
        ):
            out.setdefault(path, node)
    return out


def pointer_write_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    if "[" not in model.source or not places_on_a_device(model):
        return
    buffers = _device_buffers(model)
    if not buffers:
        return
    counters = _counters(model)
    # One finding per pointer and function: a buffer of several arrays (states, actions,
    # rewards...) written at the same pointer is one decision.
    writes: dict[tuple[int, str], list[ast.Subscript]] = {}
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        for target in node.targets:
            if not isinstance(target, ast.Subscript):
                continue
            base, index = dotted(target.value), dotted(target.slice)
            if base in buffers and index in counters:
                key = (id(model.enclosing_function(node)), index)
                writes.setdefault(key, []).append(target)
    for (_, index), targets in writes.items():
        step = counters[index]
        shown = ", ".join(f"`{model.segment(t)}`" for t in targets[:3])
        more = f" and {len(targets) - 3} more" if len(targets) > 3 else ""
        what = "writes a device tensor" if len(targets) == 1 else "write device tensors"
        yield Finding(
            code,
            f"{shown}{more} {what} at a Python int that moves on every call (`{index}`, "
            f"stepped on line {line_ref(step.lineno)}): XLA bakes the index into the graph, so "
            "each new position compiles a new graph (measured: 12 positions, 12 compiles; "
            "index_copy_ at a one-element device index compiles once), up to one per row of "
            "the buffer",
            model.span(targets[0]),
            Severity.WARNING,
            manual=MANUAL,
        )
