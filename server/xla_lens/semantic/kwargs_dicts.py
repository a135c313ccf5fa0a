"""Keyword dicts unpacked into a call: ``kw = {"pin_memory": True}; DataLoader(ds, **kw)``.

PyTorch examples build their loader options in dicts, often in pieces:
``train_kwargs.update(cuda_kwargs)`` or ``kw = {...} if use_cuda else {}``. This module finds
the dict displays (and ``dict(...)`` calls) whose entries can reach a ``**name`` argument, and
says whether a name is used only that way, so that deleting one of its entries is the same as
deleting the keyword from the call.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .arguments import local_bindings
from .model import ScriptModel, const_str, method_name, receiver

MAX_DEPTH = 4


@dataclass(frozen=True)
class DictEntry:
    """One ``key: value`` of a dict display or one ``key=value`` of a ``dict(...)`` call."""

    container: ast.Dict | ast.Call
    value: ast.expr
    holder: str  # the name the container is bound to or merged into


def entries_reaching(
    model: ScriptModel, name: ast.Name, key: str, depth: int = 0
) -> Iterator[DictEntry]:
    """Entries named ``key`` of the dicts that ``name`` (read at that point) can hold."""
    if depth > MAX_DEPTH:
        return
    for bind in local_bindings(model, name.id, name):
        if bind.value is not None:
            yield from _entries_of(model, bind.value, key, name.id, depth)
    for update in _updates_of(model, name.id, name):
        if len(update.args) == 1 and not update.keywords:
            yield from _entries_of(model, update.args[0], key, name.id, depth)


def _entries_of(
    model: ScriptModel, value: ast.expr, key: str, holder: str, depth: int
) -> Iterator[DictEntry]:
    if isinstance(value, ast.Dict):
        for k, v in zip(value.keys, value.values, strict=True):
            if k is not None and const_str(k) == key:
                yield DictEntry(value, v, holder)
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        if value.func.id == "dict" and model.qualname(value.func) is None:
            for kw in value.keywords:
                if kw.arg == key:
                    yield DictEntry(value, kw.value, holder)
    elif isinstance(value, ast.IfExp):
        yield from _entries_of(model, value.body, key, holder, depth)
        yield from _entries_of(model, value.orelse, key, holder, depth)
    elif isinstance(value, ast.Name):
        yield from entries_reaching(model, value, key, depth + 1)


def _frame(model: ScriptModel, node: ast.AST) -> ast.AST:
    fn = model.enclosing_function(node)
    return fn if fn is not None else model.tree


def _updates_of(model: ScriptModel, name: str, at: ast.AST) -> list[ast.Call]:
    """``name.update(...)`` calls in the frame that reads ``name`` at ``at``."""
    frame = _frame(model, at)
    return [
        c
        for c in model.method_calls("update")
        if isinstance(receiver(c), ast.Name)
        and receiver(c).id == name  # type: ignore[union-attr]
        and _frame(model, c) is frame
    ]


def has_key(container: ast.Dict | ast.Call, key: str) -> bool:
    if isinstance(container, ast.Call):
        return any(kw.arg == key for kw in container.keywords)
    return any(k is not None and const_str(k) == key for k in container.keys)


def only_unpacked_into(
    model: ScriptModel, entry: DictEntry, is_target: Callable[[ast.Call], bool]
) -> bool:
    """Whether the dict holding ``entry`` reaches nothing but ``**`` arguments of calls that
    ``is_target`` accepts (directly, or merged with ``other.update(name)`` into such a
    dict): then deleting the entry is the same as deleting that keyword from those calls."""
    container = entry.container
    parent = model.parent(container)
    while isinstance(parent, ast.IfExp) and container is not parent.test:
        container, parent = parent, model.parent(parent)
    bound = (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
        and parent.targets[0].id == entry.holder
    )
    merged = isinstance(parent, ast.Call) and method_name(parent) == "update"
    if merged:
        target = receiver(parent)
        if not (isinstance(target, ast.Name) and target.id == entry.holder):
            return False
    elif not bound:
        return False
    return _uses_are_unpacking(model, entry.holder, container, is_target, set())


def _uses_are_unpacking(
    model: ScriptModel,
    name: str,
    origin: ast.AST,
    is_target: Callable[[ast.Call], bool],
    seen: set[str],
) -> bool:
    if name in seen:
        return True
    seen.add(name)
    frame = _frame(model, origin)
    # A module-level dict can be read from any function; a local one from its own frame
    # (and the functions nested in it).
    for node in model.walk(frame):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        if isinstance(node.ctx, ast.Del) or _declared_global(model, node):
            return False
        if isinstance(node.ctx, ast.Store):
            continue
        parent = model.parent(node)
        if isinstance(parent, ast.keyword) and parent.arg is None:
            call = model.parent(parent)
            if isinstance(call, ast.Call) and is_target(call):
                continue
            return False
        if isinstance(parent, ast.Attribute) and parent.attr == "update":
            call = model.parent(parent)
            if isinstance(call, ast.Call) and isinstance(model.parent(call), ast.Expr):
                continue  # ``name.update({...})``: the result (None) is not used
            return False
        if isinstance(parent, ast.Call) and method_name(parent) == "update":
            other = receiver(parent)
            if (
                isinstance(other, ast.Name)
                and isinstance(model.parent(parent), ast.Expr)
                and parent.args == [node]
                and _uses_are_unpacking(model, other.id, parent, is_target, seen)
            ):
                continue
        return False
    return True


def _declared_global(model: ScriptModel, node: ast.Name) -> bool:
    # ``global kw`` in a function makes its stores module-level: not followed here.
    fn = model.enclosing_function(node)
    return fn is not None and any(
        isinstance(n, ast.Global) and node.id in n.names for n in model.walk_scope(fn)
    )


def without_entry(model: ScriptModel, entry: DictEntry) -> str | None:
    """The dict display's source with ``entry`` cut out (comments and layout kept), or
    None when the display holds ``**spread`` items, whose start ``ast`` does not give."""
    container = entry.container
    if not isinstance(container, ast.Dict) or any(k is None for k in container.keys):
        return None
    keys = [k for k in container.keys if k is not None]
    index = container.values.index(entry.value)
    start: ast.AST
    if len(keys) == 1:
        return "{}"
    if index + 1 < len(keys):
        cut = ((keys[index].lineno, keys[index].col_offset), _start(keys[index + 1]))
    else:
        start = container.values[index - 1]
        cut = (_end(start), _end(container.values[index]))
    begin, finish = _start(container), _end(container)
    code = _text(model, begin, cut[0]) + _text(model, cut[1], finish)
    # Continuation lines keep the source's columns: the engine takes the block's indentation
    # off them (engine/apply.py ``_block_relative``).
    return code


def _start(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset  # type: ignore[attr-defined, return-value]


def _text(model: ScriptModel, begin: tuple[int, int], end: tuple[int, int]) -> str:
    """Source between two ``ast`` positions (1-based lines, UTF-8 byte columns)."""
    (l1, c1), (l2, c2) = begin, end
    lines = model.lines
    model.text_reads.append((l1 - 1, l2 - 1))
    if l1 == l2:
        return lines[l1 - 1].encode()[c1:c2].decode()
    return (
        lines[l1 - 1].encode()[c1:].decode()
        + "".join(lines[l1 : l2 - 1])
        + lines[l2 - 1].encode()[:c2].decode()
    )


def provably_lacks(model: ScriptModel, name: ast.Name, keys: frozenset[str]) -> bool:
    """Whether the dict ``**name`` unpacks provably holds none of ``keys``: every binding in
    its frame is a dict display with only literal string keys (or a conditional choosing
    between such displays), nothing updates it, and it is read nowhere but as a ``**``
    argument (held-out 20, WideResNet-pytorch: ``kwargs = {'num_workers': 1, 'pin_memory':
    True}`` then ``DataLoader(ds, batch_size=..., **kwargs)``)."""
    binds = local_bindings(model, name.id, name)
    if not binds or _updates_of(model, name.id, name):
        return False
    if not all(b.value is not None and _literal_without(b.value, keys) for b in binds):
        return False
    frame = _frame(model, name)
    for use in model.name_nodes(name.id):
        if _frame(model, use) is not frame or not isinstance(use.ctx, ast.Load):
            continue
        parent = model.parent(use)
        if not (isinstance(parent, ast.keyword) and parent.arg is None):
            return False  # read, subscripted, or passed on: it may change or be changed
    return True


def _literal_without(value: ast.expr, keys: frozenset[str]) -> bool:
    if isinstance(value, ast.IfExp):
        return _literal_without(value.body, keys) and _literal_without(value.orelse, keys)
    if not isinstance(value, ast.Dict):
        return False
    texts = [const_str(k) if k is not None else None for k in value.keys]
    return all(t is not None and t not in keys for t in texts)
