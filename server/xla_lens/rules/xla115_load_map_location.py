"""XLA115: ``torch.load(..., map_location="cuda:N")`` — loading a checkpoint onto a CUDA device.

On an XLA host there is no CUDA: the load fails ("Attempting to deserialize object on a CUDA
device but torch.cuda.is_available() is False"). Loading onto the CPU is the XLA way:
``model.load_state_dict`` and ``optimizer.load_state_dict`` copy the tensors onto the device of
the parameters they fill, so a checkpoint used only through them means the same thing. A
loaded tensor or whole model used any other way stays on the CPU, so then the fix needs review.

``torch.load(path)`` without ``map_location`` restores each tensor on the device it was saved
from. In a script that saves checkpoints of a CUDA model, a checkpoint the CUDA version wrote
(the one to resume from) fails the same way on an XLA host. After conversion the script's own
saves go through ``xm.save`` (CPU tensors), so only loads of files this run did not just write
are reported: a reload of the path the script saved a few lines before reads the converted
script's own file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.binding_sets import loads_of_assigned_name
from ..semantic.line_refs import line_ref
from ..semantic.model import ScriptModel, arg_or_keyword, is_cuda_string, keyword, method_name
from ..semantic.params import parameter_of
from ..semantic.rank_guards import attribute_values
from ..semantic.storage_movers import map_location_value, moves_storage_to_cuda
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, SetKeyword, Severity
from .xla108_xm_save import is_checkpoint
from .xla116_manual_seed import runs_on_cuda

CODE = "XLA115"
LOADS = frozenset({"torch.load"})
# Checkpoint entries that hold plain Python values (counters, settings), not tensors.
PLAIN_KEYS = ("epoch", "step", "iter", "args", "config", "arch", "name", "version", "rng")
# (``rng_state`` is a tensor, but ``torch.set_rng_state`` wants it on the CPU.)
REVIEW = (
    "the checkpoint is used other than through load_state_dict ({use}); on the CPU those "
    "tensors stay off the XLA device — move them with .to(device) where they are used"
)


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


def _cuda_device_text(model: ScriptModel, node: ast.AST | None, depth: int = 0) -> bool:
    """``"cuda"``/``"cuda:0"``, ``f"cuda:{gpu}"``, ``"cuda:{}".format(gpu)``,
    ``torch.device("cuda", gpu)``, or a name bound only to those."""
    if node is None or depth > 3:
        return False
    if is_cuda_string(node):
        return True
    if isinstance(node, ast.Call):
        if method_name(node) == "format" and isinstance(node.func, ast.Attribute):
            base = node.func.value
            return isinstance(base, ast.Constant) and str(base.value).startswith("cuda")
        if model.call_name(node) == "torch.device" and node.args:
            return (
                _cuda_device_text(model, node.args[0], depth + 1)
                or (isinstance(node.args[0], ast.Constant) and node.args[0].value == "cuda")
                or (len(node.args) == 1 and not node.keywords and _int_index(model, node.args[0]))
            )
        return False
    if isinstance(node, ast.Name):
        values = model.assigned_from(node.id)
        return bool(values) and all(_cuda_device_text(model, v, depth + 1) for v in values)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        # ``map_location=self.device`` with every ``self.device = "cuda:{}".format(rank)`` of
        # the script a CUDA device (YOLOX's trainer, held-out 31). Converted to the XLA device
        # it fails the same way: torch.load cannot restore a storage onto an XLA device.
        values = attribute_values(model).get(f"{node.value.id}.{node.attr}", [])
        return bool(values) and all(_cuda_device_text(model, v, depth + 1) for v in values)
    return False


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


def _other_use(model: ScriptModel, call: ast.Call) -> str | None:
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
            if isinstance(key, ast.Constant) and any(k in str(key.value) for k in PLAIN_KEYS):
                continue
            if isinstance(parent.ctx, ast.Load) and isinstance(model.parent(parent), ast.Compare):
                continue  # `if "optimizer" in ckpt` style tests never touch tensors
            return f"`{model.segment(parent)}` on line {line_ref(node.lineno)}"
        if isinstance(parent, ast.Compare):
            continue
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


def _file_text(model: ScriptModel, node: ast.AST | None) -> str | None:
    """The path a torch.save/torch.load reads or writes: its text, or for a file object
    bound by ``with open(path, ...) as f`` the text of ``path``."""
    if node is None:
        return None
    if isinstance(node, ast.Name):
        for with_node in model.nodes_of(ast.With):
            for item in with_node.items:  # type: ignore[attr-defined]
                bound = item.optional_vars
                opened = item.context_expr
                if (
                    isinstance(bound, ast.Name)
                    and bound.id == node.id
                    and isinstance(opened, ast.Call)
                    and isinstance(opened.func, ast.Name)
                    and opened.func.id == "open"
                    and opened.args
                ):
                    return model.segment(opened.args[0])
    return model.segment(node)


def _cuda_saves(model: ScriptModel) -> list[ast.Call]:
    """The script's checkpoint saves when it runs on CUDA: what its CUDA version wrote holds
    CUDA tensors."""
    if not runs_on_cuda(model):
        return []
    # xm.save too: `fix` re-checks the text after XLA108 made its saves xm.save, and while the
    # script still runs on CUDA the file to resume from is the one its CUDA version wrote.
    saves = model.calls_to("torch.save", "torch_xla.core.xla_model.save")
    return [c for c in saves if is_checkpoint(model, arg_or_keyword(c, 0, "obj"))]


def _reads_own_save(model: ScriptModel, call: ast.Call, saves: list[ast.Call]) -> bool:
    """The load reads the path a save before it wrote (a reload of this run's own file)."""
    path = _file_text(model, arg_or_keyword(call, 0, "f"))
    return path is not None and any(
        s.lineno < call.lineno and _file_text(model, arg_or_keyword(s, 1, "f")) == path
        for s in saves
    )


def _reads_plain_save(model: ScriptModel, call: ast.Call) -> bool:
    """The load reads a path that the script writes only with objects that are no checkpoint
    (``torch.save((vocab_src, vocab_tgt), "vocab.pt")`` then, in the ``else``,
    ``torch.load("vocab.pt")``: the annotated transformer, held-out 27): it holds no tensor
    the CUDA run placed."""
    path = _file_text(model, arg_or_keyword(call, 0, "f"))
    if path is None:
        return False
    writes = [
        s
        for s in model.calls_to("torch.save", "torch_xla.core.xla_model.save")
        if _file_text(model, arg_or_keyword(s, 1, "f")) == path
    ]
    return bool(writes) and not any(
        is_checkpoint(model, arg_or_keyword(s, 0, "obj")) for s in writes
    )


def _cuda_written(model: ScriptModel) -> Iterator[Finding]:
    """``torch.load(path)`` without map_location of a checkpoint the CUDA version wrote."""
    saves = model.memo(_cuda_saves, lambda: _cuda_saves(model))
    if not saves:
        return
    for call in model.calls_to(*LOADS):
        if keyword(call, "map_location") is not None or len(call.args) != 1:
            continue
        if any(kw.arg is None for kw in call.keywords) or _reads_own_save(model, call, saves):
            continue
        if _reads_plain_save(model, call):
            continue
        use = _other_use(model, call)
        reason = "" if use is None else REVIEW.format(use=use)
        yield Finding(
            CODE,
            "torch.load without map_location restores tensors where they were saved: a "
            "checkpoint the CUDA version of this script wrote holds CUDA tensors and fails to "
            'load on an XLA host; load on the CPU (map_location="cpu") and let '
            "load_state_dict copy onto the XLA device",
            model.span(call),
            Severity.WARNING,
            fix=Fix(
                'Load on the CPU: map_location="cpu"',
                (SetKeyword(model.span(call), "map_location", '"cpu"'),),
                safe=not reason,
                review_reason=reason,
            ),
        )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _cuda_written(model)
    for call in model.calls_to(*LOADS):
        value = map_location_value(model, call)
        if value is None:
            continue
        if moves_storage_to_cuda(model, value):
            message = (
                f"torch.load's map_location moves each storage onto CUDA "
                f"(`{model.segment(value.body)}`): an XLA host has no CUDA, and a storage "
                "cannot be restored onto the XLA device there; load on the CPU "
                '(map_location="cpu") and let load_state_dict copy onto the XLA device'
            )
        elif _cuda_device_text(model, value):
            message = (
                "torch.load onto a CUDA device: an XLA host has no CUDA, so the load fails; "
                'load on the CPU (map_location="cpu") and let load_state_dict copy onto the XLA '
                "device"
            )
        else:
            continue
        use = _other_use(model, call)
        reason = "" if use is None else REVIEW.format(use=use)
        yield Finding(
            CODE,
            message,
            model.span(value),
            Severity.WARNING,
            fix=Fix(
                'Load on the CPU: map_location="cpu"',
                (Replace(model.span(value), '"cpu"'),),
                safe=not reason,
                review_reason=reason,
            ),
        )


HOVER = """\
**XLA115 · torch.load onto a CUDA device**

`torch.load(path, map_location="cuda:0")` fails on an XLA host (no CUDA). Load on the CPU:
`torch.load(path, map_location="cpu")`. `model.load_state_dict(...)` and
`optimizer.load_state_dict(...)` copy each tensor onto the device of the parameter it fills,
so a checkpoint used through them ends up on the XLA device; anything else loaded from it
(a whole pickled model, a tensor) needs `.to(device)`.
"""

RULE = Rule(
    code=CODE,
    name="load-map-location",
    category=Category.CONVERSION,
    summary='torch.load(..., map_location="cuda:N") fails without CUDA → map_location="cpu" (load_state_dict copies to the XLA device)',
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={"torch.load": HOVER},
)
