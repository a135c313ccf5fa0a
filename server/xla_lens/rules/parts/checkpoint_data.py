"""XLA108: ``torch.save`` of data on the device that is no state dict (held-out 8 H9,
hlb-CIFAR10 caches its preprocessed dataset: ``data = {'train': {...}, 'eval': {...}}`` of
tensors moved with ``.to(device=...)``, saved with torch.save and reloaded with torch.load).

After conversion those are XLA tensors: torch.save pickles them as XLA tensors, so the file
loads only where torch_xla is installed (or with map_location='cpu'). ``xm.save`` moves plain tensors to the CPU first (it
walks dicts, lists and tuples) and writes on the master ordinal only. No fix: the file then
holds CPU tensors, so what ``torch.load`` gives back is no longer on the device, and the
loading code must change too.

A value counts as device data when it is a tensor moved to a device (``.cuda()``,
``.to(device)`` / ``.to(device=...)``, and methods of such a tensor that keep it there:
``.half()``, ``.view(...)``, ``.to(torch.float16)``), a dict / list / tuple holding one, or a
name bound to one, also through item stores (``data["train"] = train``,
``train["x"], train["y"] = [t.to(device) for t in batch]``). ``.cpu()`` / ``.numpy()`` /
``.to("cpu")`` end it. A name is judged by the assignment that reaches the save (the last one
that always runs before it), not by every binding the name ever had.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, method_name
from ...semantic.reaching import bindings, walk_back

HOST_METHODS = frozenset({"cpu", "numpy", "tolist", "item"})
DTYPE_PREFIXES = ("torch.float", "torch.bfloat", "torch.half", "torch.int", "torch.bool")
MAX_DEPTH = 6


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _item_stores(model: ScriptModel, name: str) -> list[ast.expr]:
    """Values stored into ``name[...]`` (``name[k] = v``, ``name[a], name[b] = [..]``)."""
    out: list[ast.expr] = []
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        for target in node.targets:
            if isinstance(target, ast.Subscript) and _root_name(target) == name:
                out.append(node.value)
            elif isinstance(target, ast.Tuple | ast.List):
                for i, elt in enumerate(target.elts):
                    if not (isinstance(elt, ast.Subscript) and _root_name(elt) == name):
                        continue
                    value = node.value
                    if isinstance(value, ast.Tuple | ast.List) and i < len(value.elts):
                        out.append(value.elts[i])
                    elif isinstance(value, ast.ListComp):
                        out.append(value.elt)
    return out


def _binds_whole(stmt: ast.stmt, name: str) -> bool:
    if not isinstance(stmt, ast.Assign):
        return False
    for target in stmt.targets:
        elts = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
        if any(isinstance(e, ast.Name) and e.id == name for e in elts):
            return True
    return False


def _reaching_values(model: ScriptModel, node: ast.Name) -> list | None:
    """The values of ``node``'s name that reach it: from the last assignment that always runs
    before it (hyp_metric's ``x, y = x.float().cpu(), y.long().cpu()`` before its
    ``torch.save((x, y), ...)``, held-out 161, not the loop's ``x = x.cuda()`` above). None
    when no such assignment is seen (then every binding counts)."""
    found = walk_back(model, node, node.id, lambda s: _binds_whole(s, node.id))
    if found is None or found[0] is None:
        return None
    stop, between = found
    return [*bindings(model, stop, node.id), *between]


def _moves_to_device(model: ScriptModel, call: ast.Call) -> bool | None:
    """``.to(...)``: True to a device, False to the CPU, None for a dtype-only cast."""
    places = [kw.value for kw in call.keywords if kw.arg == "device"]
    places += [
        a
        for a in call.args
        if not (
            isinstance(a, ast.Attribute) and (model.qualname(a) or "").startswith(DTYPE_PREFIXES)
        )
    ]
    if not places:
        return None
    first = places[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return not first.value.startswith("cpu")
    return True


def device_data(
    model: ScriptModel, node: ast.AST | None, depth: int = 0, seen: set[str] | None = None
) -> ast.AST | None:
    """The first device-placed tensor ``node`` holds (see the module doc), or None."""
    if node is None or depth > MAX_DEPTH:
        return None
    seen = set() if seen is None else seen
    if isinstance(node, ast.Dict):
        values: list[ast.AST | None] = list(node.values)
    elif isinstance(node, ast.List | ast.Tuple):
        values = list(node.elts)
    elif isinstance(node, ast.ListComp):
        values = [node.elt]
    elif isinstance(node, ast.Name):
        if node.id in seen:
            return None  # each name's bindings once (``data[k] = data[k].half()``)
        seen.add(node.id)
        reaching = _reaching_values(model, node)
        values = [
            *(reaching if reaching is not None else model.assigned_from(node.id)),
            *_item_stores(model, node.id),
        ]
    elif isinstance(node, ast.Subscript):
        values = [node.value]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        name = method_name(node)
        if model.call_name(node) is not None or name in HOST_METHODS:
            return None  # a library function's result, or a host copy
        if name == "cuda":
            return node
        if name == "to":
            moved = _moves_to_device(model, node)
            if moved is not None:
                return node if moved else None
        values = [node.func.value]
    else:
        return None
    for value in values:
        found = device_data(model, value, depth + 1, seen)
        if found is not None:
            return found
    return None
