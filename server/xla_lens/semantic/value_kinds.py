"""The kinds of place a helper's value may live in, and how ops and branches join them
(``value_places.py``): ``NUM`` a Python value, ``CPU`` a host tensor, ``DEV`` a device tensor,
``UNK`` not known. A value is a set of kinds (either one) or a tuple of values."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

NUM, CPU, DEV, UNK = "num", "cpu", "dev", "unk"
RANK = {NUM: 0, CPU: 1, UNK: 2, DEV: 3}
Value = frozenset[str] | tuple  # a set of kinds, or a tuple of values


def kinds(value: Value) -> frozenset[str]:
    """Every kind ``value`` may be, tuples flattened."""
    if isinstance(value, frozenset):
        return value
    out: set[str] = set()
    for v in value:
        out |= kinds(v)
    return frozenset(out) or frozenset({NUM})


def either(values: Iterable[Value]) -> Value:
    """One of ``values``: tuples of one length element by element, else their kinds."""
    items = list(values)
    if not items:
        return frozenset({NUM})
    if all(isinstance(v, tuple) for v in items) and len({len(v) for v in items}) == 1:
        return tuple(either(parts) for parts in zip(*items, strict=True))
    out: set[str] = set()
    for v in items:
        out |= kinds(v)
    return frozenset(out)


def combine(values: Iterable[Value]) -> frozenset[str]:
    """What an op on all of ``values`` gives: the highest-ranked operand, for each choice."""
    out = frozenset({NUM})
    for v in values:
        out = frozenset(max(a, b, key=RANK.__getitem__) for a in out for b in kinds(v))
    return out


def verdict(value: Value) -> str | None:
    """``None``: a host value (no sync); ``"device"``: a device (or unknown) tensor; ``"mixed"``:
    a CPU tensor on some paths and a device or unknown one on others. A Python value on a path
    is no read at all (``.item()`` of a number raises), so it does not make a mix."""
    found = kinds(value) - {NUM}
    if found <= {CPU}:
        return None
    return "mixed" if CPU in found else "device"


def unpack(target: ast.AST, value: Value, name: str) -> Value | None:
    """What ``target = value`` binds to ``name`` (None when it binds no ``name``)."""
    if isinstance(target, ast.Name):
        return value if target.id == name else None
    if isinstance(target, ast.Starred):
        return unpack(target.value, kinds(value), name)
    if isinstance(target, ast.Tuple | ast.List):
        plain = not any(isinstance(t, ast.Starred) for t in target.elts)
        if isinstance(value, tuple) and plain and len(value) == len(target.elts):
            parts: Sequence[Value] = value
        else:  # unpacking a tensor (its rows live where it lives) or an unknown sequence
            parts = [kinds(value)] * len(target.elts)
        for t, v in zip(target.elts, parts, strict=True):
            found = unpack(t, v, name)
            if found is not None:
                return found
    return None
