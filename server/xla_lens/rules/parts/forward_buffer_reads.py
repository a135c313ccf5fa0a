"""A module's forward that reads one of its own buffers on the host (XLA401) and writes at
that offset (XLA402):

    class MoCo(nn.Module):
        def __init__(self):
            self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))
        def _enqueue(self, keys):
            ptr = int(self.queue_ptr)                 # a device -> host read, every forward
            self.queue[:, ptr : ptr + n] = keys.T     # the offset is baked into the graph
        def forward(self, x):
            ...
            self._enqueue(k)

A registered buffer moves with the module: once the model is on the XLA device,
``int(self.queue_ptr)`` runs the pending graph and copies the value to the host on every
forward (held-out 17, MoCo: one TransferFromDevice per step), and the slice at that Python
offset is a constant of the traced graph, so each distinct offset compiles a new graph (4
compiles in 8 steps with offsets 0, 4, 8, 12; 1 with ``index_copy_`` at a device index). The
forward runs every training step wherever the loop is, so this needs no loop in the file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, const_str

MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
HOST_CASTS = frozenset({"int", "float", "bool"})
READ_METHODS = frozenset({"item", "tolist"})


@dataclass(frozen=True)
class BufferRead:
    node: ast.expr  # ``int(self.queue_ptr)`` / ``self.queue_ptr.item()``
    buffer: str
    method: str  # the method it is in
    bound: str | None  # the name it is assigned to (``ptr``)
    slices: tuple[ast.Subscript, ...]  # stores at a slice that uses ``bound``


def forward_buffer_reads(model: ScriptModel) -> list[BufferRead]:
    return model.memo(forward_buffer_reads, lambda: list(_reads(model)))


def _reads(model: ScriptModel) -> Iterator[BufferRead]:
    for cls in model.nodes_of(ast.ClassDef):
        assert isinstance(cls, ast.ClassDef)
        if not any(model.qualname(b) in MODULE_BASES for b in cls.bases):
            continue
        buffers = _buffers(cls)
        methods = {
            s.name: s for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        if not buffers or "forward" not in methods:
            continue
        for name in _reached(methods):
            fn = methods[name]
            for node in ast.walk(fn):
                buffer = _buffer_read(node, buffers)
                if buffer is None:
                    continue
                bound = _bound_name(model, node)
                yield BufferRead(node, buffer, name, bound, _slices_at(fn, bound))


def _buffers(cls: ast.ClassDef) -> set[str]:
    out = set()
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "register_buffer"
            and node.args
        ):
            name = const_str(node.args[0])
            if name:
                out.add(name)
    return out


def _reached(methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> list[str]:
    """``forward`` and the methods it calls through ``self.<name>(...)``, transitively."""
    order, todo = [], ["forward"]
    while todo:
        name = todo.pop()
        if name in order:
            continue
        order.append(name)
        for node in ast.walk(methods[name]):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and _is_self(node.func.value)
                and node.func.attr in methods
            ):
                todo.append(node.func.attr)
    return order


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _self_attr(node: ast.AST, buffers: set[str]) -> str | None:
    """``self.ptr`` / ``self.ptr[0]`` of a registered buffer."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and _is_self(node.value) and node.attr in buffers:
        return node.attr
    return None


def _buffer_read(node: ast.AST, buffers: set[str]) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name) and node.func.id in HOST_CASTS and len(node.args) == 1:
        return _self_attr(node.args[0], buffers)
    if isinstance(node.func, ast.Attribute) and node.func.attr in READ_METHODS and not node.args:
        return _self_attr(node.func.value, buffers)
    return None


def _bound_name(model: ScriptModel, node: ast.AST) -> str | None:
    parent = model.parent(node)
    if (
        isinstance(parent, ast.Assign)
        and parent.value is node
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        return parent.targets[0].id
    return None


def _slices_at(fn: ast.AST, name: str | None) -> tuple[ast.Subscript, ...]:
    """Stores into a slice whose bounds use ``name``: ``q[:, ptr : ptr + n] = ...``."""
    if name is None:
        return ()
    out = []
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)):
            continue
        bounds = [s for s in ast.walk(node.slice) if isinstance(s, ast.Slice)]
        if any(
            isinstance(n, ast.Name) and n.id == name
            for s in bounds
            for part in (s.lower, s.upper)
            if part is not None
            for n in ast.walk(part)
        ):
            out.append(node)
    return tuple(out)


def read_message(model: ScriptModel, read: BufferRead) -> str:
    shown = model.segment(read.node)
    where = (
        "in forward()" if read.method == "forward" else f"in {read.method}(), which forward() calls"
    )
    return (
        f"`{shown}` reads the buffer `self.{read.buffer}` on the host {where}: the buffer moves "
        "with the module, so on the XLA device every forward (every training step) runs the "
        "pending graph and copies the value to the host"
    )


READ_MANUAL = (
    "keep the value on the device: index with tensors (`index_copy_`, `torch.arange(n, "
    "device=...) + self.ptr`) instead of a Python number, and read it only for logging"
)


def slice_message(model: ScriptModel, read: BufferRead) -> str:
    return (
        f"the slice offset `{read.bound}` comes from `self.{read.buffer}` "
        f"(line {line_ref(read.node.lineno)}) and changes every step: a Python offset is a "
        "constant of the traced graph, so each distinct offset compiles a new graph"
    )


SLICE_MANUAL = (
    "write at a device index instead: `buf.index_copy_(dim, (self.ptr + torch.arange(n, "
    "device=buf.device)) % size, values)` keeps one graph for every offset"
)

__all__ = ["forward_buffer_reads", "read_message", "slice_message"]
