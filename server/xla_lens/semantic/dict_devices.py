"""CUDA devices kept in settings dicts: ``hyp = {"misc": {"device": "cuda"}}`` or
``hyp["misc"]["device"] = "cuda"``, later read as ``x.to(hyp["misc"]["device"])``.

An entry is named by its root variable and its chain of constant keys. Its reads are the
subscript chains of the root that spell the same keys (``hyp["misc"]["device"]``,
``hyp["misc"].get("device")``); each read is then classified like any device value
(``values.DeviceFlow``). Anything that could read the entry out of sight makes the entry
unfollowable: the dict (or a sub-dict on the way) used whole (passed to a call, aliased,
iterated, dumped to JSON, where a device object is not a string any more) or indexed by a
computed key. Pure analysis: XLA101 builds the finding and the fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from .model import ScriptModel, const_str
from .values import DeviceFlow, Use

# ``d.get("device")`` / ``d.setdefault("device", x)`` read the entry named by the first argument.
KEYED_READS = frozenset({"get", "setdefault", "pop"})


@dataclass(frozen=True)
class Entry:
    root: str  # the variable holding the outermost dict
    keys: tuple[str, ...]  # constant keys from the root down to the entry
    scope: ast.AST | None  # the function binding the root (None: the module)


def is_device_key(key: str) -> bool:
    """``"device"``, ``"dev"``, ``"train_device"``: a key that names a device."""
    return "dev" in key.lower()


def literal_entry_sites(model: ScriptModel) -> Iterator[tuple[ast.expr, str]]:
    """(value, key) of every dict-display entry and constant-key subscript store whose key
    names a device: candidate sites, to be tested for a CUDA value by the caller."""
    for node in model.nodes_of(ast.Dict):
        assert isinstance(node, ast.Dict)
        for k, v in zip(node.keys, node.values, strict=True):
            key = const_str(k) if k is not None else None
            if key is not None and is_device_key(key):
                yield v, key
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Subscript):
            continue
        key = const_str(node.targets[0].slice)
        if key is not None and is_device_key(key):
            yield node.value, key


def entry_of(model: ScriptModel, site: ast.AST) -> Entry | None:
    """The dict entry ``site`` is the value of, when it hangs from a plain variable by
    constant keys; None otherwise (a dict passed straight to a call, a computed key)."""
    p = model.parent(site)
    if isinstance(p, ast.Assign) and p.value is site and len(p.targets) == 1:
        chain = _key_chain(p.targets[0])
        if chain is None or not chain[1] or isinstance(model.parent(p), ast.ClassDef):
            return None
        return Entry(chain[0].id, chain[1], model.enclosing_function(p))
    keys: list[str] = []
    node: ast.AST = site
    while isinstance(p, ast.Dict) and any(v is node for v in p.values):
        index = next(i for i, v in enumerate(p.values) if v is node)
        k = p.keys[index]
        key = const_str(k) if k is not None else None
        if key is None:
            return None
        keys.insert(0, key)
        node, p = p, model.parent(p)
    if not keys:
        return None
    if isinstance(p, ast.Assign) and p.value is node and len(p.targets) == 1:
        target = p.targets[0]
    elif isinstance(p, ast.AnnAssign) and p.value is node:
        target = p.target
    else:
        return None
    chain = _key_chain(target)
    if chain is None or isinstance(model.parent(p), ast.ClassDef):
        return None  # a class attribute is read as ``self.hp[...]``: not followed here
    return Entry(chain[0].id, chain[1] + tuple(keys), model.enclosing_function(p))


def _key_chain(node: ast.AST) -> tuple[ast.Name, tuple[str, ...]] | None:
    """``hyp["a"]["b"]`` -> (hyp, ("a", "b")); None when a key is not a constant string."""
    keys: list[str] = []
    while isinstance(node, ast.Subscript):
        key = const_str(node.slice)
        if key is None:
            return None
        keys.insert(0, key)
        node = node.value
    return (node, tuple(keys)) if isinstance(node, ast.Name) else None


def entry_uses(model: ScriptModel, flow: DeviceFlow, entry: Entry) -> list[Use]:
    """Every read of the entry, classified; a use that is not ok for anything that could
    read it out of sight."""
    out: list[Use] = []
    for name in _root_reads(model, entry):
        out.extend(_read_uses(model, flow, name, entry.keys))
    return out


def _root_reads(model: ScriptModel, entry: Entry) -> list[ast.Name]:
    found = []
    for n in model.name_nodes(entry.root):
        if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)):
            continue
        fn = model.enclosing_function(n)
        if entry.scope is None:
            # A module dict read in a function that binds the same name is another variable.
            if fn is not None and entry.root in _locals(model, fn):
                continue
        elif not _within(model, n, entry.scope):
            continue
        found.append(n)
    return found


def _within(model: ScriptModel, node: ast.AST, scope: ast.AST) -> bool:
    return any(a is scope for a in model.ancestors(node))


def _locals(model: ScriptModel, fn: ast.AST) -> set[str]:
    def compute() -> set[str]:
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        names = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
        declared = {
            g for s in ast.walk(fn) if isinstance(s, ast.Global | ast.Nonlocal) for g in s.names
        }
        names |= {
            n.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        return names - declared

    return model.memo((_locals, id(fn)), compute)


def _read_uses(
    model: ScriptModel, flow: DeviceFlow, name: ast.Name, keys: tuple[str, ...]
) -> list[Use]:
    node: ast.AST = name
    depth = 0
    while True:
        p = model.parent(node)
        if isinstance(p, ast.Subscript) and p.value is node:
            key = const_str(p.slice)
            if key is None:
                return [Use(p, False, "indexed by a computed key: the entry is not followed")]
            if key != keys[depth]:
                return []  # another entry
            node, depth = p, depth + 1
            if depth == len(keys):
                if not isinstance(p.ctx, ast.Load):
                    return []  # the entry is stored again (another value) or deleted
                return flow.uses_of_expr(p)
            continue
        if isinstance(getattr(node, "ctx", None), ast.Store | ast.Del):
            return []  # a sub-dict on the way replaced or deleted: another value
        keyed = _keyed_read(model, node)
        if keyed is not None:
            call, key = keyed
            if key is None:
                return [Use(call, False, "read by a computed key: the entry is not followed")]
            if key != keys[depth]:
                return []  # another entry
            if depth + 1 == len(keys):
                return flow.uses_of_expr(call)
        path = name.id + "".join(f"[{k!r}]" for k in keys[:depth])
        return [Use(node, False, f"{path} is used whole: its {keys[-1]!r} entry is not followed")]


def _keyed_read(model: ScriptModel, node: ast.AST) -> tuple[ast.Call, str | None] | None:
    """``node.get("key")``: the call and the key it reads."""
    attr = model.parent(node)
    if not (isinstance(attr, ast.Attribute) and attr.value is node and attr.attr in KEYED_READS):
        return None
    call = model.parent(attr)
    if not (isinstance(call, ast.Call) and call.func is attr and call.args):
        return None
    return call, const_str(call.args[0])
