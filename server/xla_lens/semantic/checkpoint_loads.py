"""How a script uses what ``torch.load`` gives: only through ``load_state_dict`` (which copies
each tensor onto the device of the parameter it fills, so loading on the CPU means the same
thing) or otherwise (a loaded tensor or model used directly stays where it was loaded).
XLA115 asks it before loading on the CPU; XLA101 asks it before giving a device that a load's
``map_location`` reads the XLA device, which torch.load cannot restore onto."""

from __future__ import annotations

import ast

from .arguments import argparse_options, is_parsed_args, literal_sources
from .binding_sets import loads_of_assigned_name
from .line_refs import line_ref
from .model import ScriptModel, is_cuda_string, keyword, method_name
from .params import parameter_of
from .rank_guards import attribute_values

# Checkpoint entries that hold plain Python values (counters, settings), not tensors.
# (``rng_state`` is a tensor, but ``torch.set_rng_state`` wants it on the CPU.)
PLAIN_KEYS = ("epoch", "step", "iter", "args", "config", "arch", "name", "version", "rng")
ENTRY_METHODS = frozenset({"get", "pop"})


def _plain_key(key: ast.AST | None) -> bool:
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return False
    return any(k in key.value for k in PLAIN_KEYS)


def _into_load_state_dict(model: ScriptModel, node: ast.AST) -> bool:
    """An argument of ``load_state_dict`` that copies it into the existing parameters (with
    ``assign=True`` the loaded tensors become the parameters, and stay on the CPU)."""
    parent = model.parent(node)
    if not (
        isinstance(parent, ast.Call)
        and method_name(parent) == "load_state_dict"
        and node in parent.args
    ):
        return False
    assign = keyword(parent, "assign")
    return assign is None or (
        isinstance(assign.value, ast.Constant) and assign.value.value is False
    )


def other_use(model: ScriptModel, call: ast.Call) -> str | None:
    """The first use of the loaded checkpoint that is not a load_state_dict argument or a
    plain entry (epoch, args...), or None when there is none."""
    if _into_load_state_dict(model, call):
        return None  # model.load_state_dict(torch.load(path))
    entry = model.parent(call)
    if isinstance(entry, ast.Subscript) and entry.value is call:
        if _into_load_state_dict(model, entry) or _rekeyed_into_load_state_dict(model, entry):
            return None  # model.load_state_dict(torch.load(path)["model"])
    stmt = model.enclosing_statement(call)
    if not (
        isinstance(stmt, ast.Assign)
        and stmt.value is call
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return "its result is not kept in one name"
    name = stmt.targets[0].id
    scope = model.enclosing_function(call) or model.tree
    # The first use in the source is the one named (walk_scope runs in no source order).
    # Uses of this load only: up to the next store to the name (DeepLabv3's train and eval
    # branches each load their own `checkpoint`, held-out 26).
    stores = sorted(
        node.lineno
        for node in model.walk_scope(scope)
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
        and node.lineno > stmt.lineno
    )  # fmt: skip
    until = stores[0] if stores else None
    loads = sorted(
        (
            node
            for node in model.walk_scope(scope)
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
            and node.lineno >= stmt.lineno and (until is None or node.lineno < until)
        ),
        key=lambda node: (node.lineno, node.col_offset),
    )  # fmt: skip
    for node in loads:
        if _into_load_state_dict(model, node):
            continue
        parent = model.parent(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            key = parent.slice
            if _into_load_state_dict(model, parent) or _rekeyed_into_load_state_dict(model, parent):
                continue
            if _plain_key(key):
                continue
            if isinstance(parent.ctx, ast.Load) and isinstance(model.parent(parent), ast.Compare):
                continue  # `if "optimizer" in ckpt` style tests never touch tensors
            return f"`{model.segment(parent)}` on line {line_ref(node.lineno)}"
        if isinstance(parent, ast.Compare):
            continue
        entry = model.parent(parent)
        if (
            isinstance(parent, ast.Attribute)
            and parent.attr in ENTRY_METHODS
            and isinstance(entry, ast.Call)
            and entry.func is parent
            and entry.args
            and (_plain_key(entry.args[0]) or _into_load_state_dict(model, entry))
        ):
            continue  # ``ckpt.pop("best_ap", 0)``, ``model.load_state_dict(ckpt.get("model"))``
        return f"`{name}` on line {line_ref(node.lineno)}"
    return None


def _rekeyed_into_load_state_dict(model: ScriptModel, entry: ast.Subscript) -> bool:
    """``sd = {k[7:]: v for k, v in ckpt["state_dict"].items()}`` then only
    ``model.load_state_dict(sd)``: the same tensors under new keys, copied into the
    parameters (the ``module.`` prefix of a DataParallel checkpoint stripped)."""
    attr = model.parent(entry)
    items = model.parent(attr)
    if not (
        isinstance(attr, ast.Attribute)
        and attr.attr == "items"
        and isinstance(items, ast.Call)
        and items.func is attr
    ):
        return False
    gen = model.parent(items)
    comp = model.parent(gen)
    if not (
        isinstance(gen, ast.comprehension)
        and gen.iter is items
        and isinstance(comp, ast.DictComp)
        and isinstance(gen.target, ast.Tuple)
        and len(gen.target.elts) == 2
        and isinstance(gen.target.elts[1], ast.Name)
        and isinstance(comp.value, ast.Name)
        and comp.value.id == gen.target.elts[1].id
    ):
        return False
    if _into_load_state_dict(model, comp):
        return True  # model.load_state_dict({k.replace("module.", ""): v for k, v in ...})
    uses = loads_of_assigned_name(model, model.parent(comp))
    return bool(uses) and all(_into_load_state_dict(model, n) for n in uses)  # type: ignore[union-attr]


def _is_int(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    )


def _int_index(model: ScriptModel, node: ast.AST) -> bool:
    """An integer: ``torch.device(0)`` is accelerator (CUDA) index 0. A name counts when it
    is bound only to integer literals, or is a parameter whose default is one."""
    if _is_int(node):
        return True
    if not isinstance(node, ast.Name):
        return False
    param = parameter_of(model, node)
    if param is not None:
        fn = param[0]
        args = fn.args  # type: ignore[attr-defined]
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        with_default = positional[len(positional) - len(args.defaults) :]
        defaults = dict(zip(with_default, args.defaults, strict=True))
        defaults.update(
            {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d}
        )
        return _is_int(defaults.get(node.id))
    values = model.assigned_from(node.id)
    return bool(values) and all(_is_int(v) for v in values)


def _rewraps(model: ScriptModel, value: ast.expr, name: str) -> bool:
    """``torch.device(name)``: the name's own value as a device."""
    return (
        isinstance(value, ast.Call)
        and model.call_name(value) == "torch.device"
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Name)
        and value.args[0].id == name
    )


def cuda_device_text(
    model: ScriptModel, node: ast.AST | None, depth: int = 0, branches: bool = True
) -> bool:
    """``"cuda"``/``"cuda:0"``, ``f"cuda:{gpu}"``, ``"cuda:{}".format(gpu)``, ``"cuda:%d" % gpu``,
    ``torch.device("cuda", gpu)``, or a name bound only to those."""
    if node is None or depth > 5:
        return False
    if is_cuda_string(node):
        return True
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, ast.Constant)
        and str(node.left.value).startswith("cuda")
    ):
        return True  # ``'cuda:%d' % rank`` (XMem's trainer, held-out 47)
    if isinstance(node, ast.IfExp) and branches:
        # ``"cuda" if cuda_ok else "cpu"``: converted, the device is the XLA one, which
        # torch.load cannot restore onto either (only the CPU branch loads).
        return cuda_device_text(model, node.body, depth + 1) or cuda_device_text(
            model, node.orelse, depth + 1
        )
    if isinstance(node, ast.Call):
        if method_name(node) == "format" and isinstance(node.func, ast.Attribute):
            base = node.func.value
            return isinstance(base, ast.Constant) and str(base.value).startswith("cuda")
        if model.call_name(node) == "torch.device" and node.args:
            return (
                cuda_device_text(model, node.args[0], depth + 1, branches)
                or (isinstance(node.args[0], ast.Constant) and node.args[0].value == "cuda")
                or (len(node.args) == 1 and not node.keywords and _int_index(model, node.args[0]))
            )
        return False
    if isinstance(node, ast.Name):
        # ``device = "cuda" if ok else "cpu"`` then ``device = torch.device(device)`` (held-out
        # 45): the re-wrap is the same device.
        values = [v for v in model.assigned_from(node.id) if not _rewraps(model, v, node.id)]
        return bool(values) and all(cuda_device_text(model, v, depth + 1, branches) for v in values)
    if isinstance(node, ast.Attribute) and node.attr == "type":
        # ``map_location=args.device.type`` (SimCLR's --reload, held-out 51): "cuda", then
        # "xla" once the device is converted, which torch.load cannot restore onto either.
        return cuda_device_text(model, node.value, depth + 1, branches)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        # ``map_location=self.device`` with every ``self.device = "cuda:{}".format(rank)`` of
        # the script a CUDA device (YOLOX's trainer, held-out 31). Converted to the XLA device
        # it fails the same way: torch.load cannot restore a storage onto an XLA device.
        values = attribute_values(model).get(f"{node.value.id}.{node.attr}", [])
        if values:
            return all(cuda_device_text(model, v, depth + 1, branches) for v in values)
        # ``torch.device(args.device)`` with ``--device`` defaulting to "cuda:0" (held-out
        # 42, MedSAM): converted, the default is the XLA device, which torch.load cannot
        # restore onto either. Only the script's device, not a certain CUDA one.
        return branches and _cuda_option_default(model, node)
    return False


def _cuda_option_default(model: ScriptModel, node: ast.Attribute) -> bool:
    if not isinstance(node.value, ast.Name) or not is_parsed_args(model, node.value):
        return False
    option = argparse_options(model).get(node.attr)
    if option is None or option.default is None:
        return False
    sources = literal_sources(model, option.default)
    return bool(sources) and all(is_cuda_string(s) for s in sources)


__all__ = ["cuda_device_text", "other_use"]
