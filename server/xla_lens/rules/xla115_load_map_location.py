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

from ..semantic.checkpoint_loads import cuda_device_text, other_use
from ..semantic.device_intent import places_on_cuda, runs_on_cuda, uses_xla_device
from ..semantic.kwargs_dicts import DictEntry, entries_reaching, has_key, only_unpacked_into
from ..semantic.model import ScriptModel, arg_or_keyword, keyword
from ..semantic.pickers import is_availability
from ..semantic.storage_movers import (
    MAP_LOCATION_AT,
    map_location_value,
    maps_storages_to_cuda,
    moves_storage_to_cuda,
)
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, SetKeyword, Severity
from .parts.checkpoint_helpers import helper_checkpoint_saves
from .parts.external_devices import trains_on_an_external_cuda_pick
from .xla108_xm_save import is_checkpoint

CODE = "XLA115"
LOADS = frozenset({"torch.load"})
REVIEW = (
    "the checkpoint is used other than through load_state_dict ({use}); on the CPU those "
    "tensors stay off the XLA device — move them with .to(device) where they are used"
)


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
    if not (runs_on_cuda(model) or trains_on_an_external_cuda_pick(model)):
        return []
    # xm.save too: `fix` re-checks the text after XLA108 made its saves xm.save, and while the
    # script still runs on CUDA the file to resume from is the one its CUDA version wrote.
    saves = model.calls_to("torch.save", "torch_xla.core.xla_model.save")
    own = [c for c in saves if is_checkpoint(model, arg_or_keyword(c, 0, "obj"))]
    return own or helper_checkpoint_saves(model, is_checkpoint)


def _reads_own_save(model: ScriptModel, call: ast.Call, saves: list[ast.Call]) -> bool:
    """The load reads the path a save before it wrote (a reload of this run's own file)."""
    path = _file_text(model, arg_or_keyword(call, 0, "f"))
    return path is not None and any(
        s.lineno < call.lineno and _file_text(model, arg_or_keyword(s, 1, "f")) == path
        for s in saves
    )


def _into_scaler(model: ScriptModel, call: ast.Call) -> bool:
    """``scaler.load_state_dict(torch.load(path))`` of a GradScaler: its state dict holds
    Python numbers (the scale read with ``.item()``, the growth tracker), no tensor the CUDA
    run placed (PVDM's trainer, held-out 100)."""
    parent = model.parent(call)
    if not (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr == "load_state_dict"
        and parent.args
        and parent.args[0] is call
    ):
        return False
    owner = parent.func.value
    return isinstance(owner, ast.Name) and owner.id in model.scaler_names


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
    # A script on the XLA device with only CUDA seeding left has no "CUDA version" to speak of
    # (BarlowTwins on TPU, held-out 119); its checkpoints may still come from a CUDA run.
    writer = (
        "the CUDA version of this script"
        if places_on_cuda(model) or not uses_xla_device(model)
        else "a CUDA run"
    )
    for call in model.calls_to(*LOADS):
        if keyword(call, "map_location") is not None or len(call.args) != 1:
            continue
        if any(kw.arg is None for kw in call.keywords) or _reads_own_save(model, call, saves):
            continue
        if _reads_plain_save(model, call) or _into_scaler(model, call):
            continue
        use = other_use(model, call)
        reason = "" if use is None else REVIEW.format(use=use)
        yield Finding(
            CODE,
            "torch.load without map_location restores tensors where they were saved: a "
            f"checkpoint {writer} wrote holds CUDA tensors and fails to "
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


SAFETENSORS_LOADS = frozenset({"safetensors.torch.load_file"})


def _device_index(model: ScriptModel, value: ast.expr) -> bool:
    """``device.index`` / ``x.get_device()``: an integer, which safetensors (like torch) takes
    as a CUDA ordinal. Converted, ``torch_xla.device().index`` is 0, so the load asks for
    cuda:0, which an XLA host does not have (held-out 48's trainer)."""
    if isinstance(value, ast.Attribute) and value.attr == "index":
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "get_device"
        and not value.args
    )


def _safetensors_loads(model: ScriptModel) -> Iterator[Finding]:
    """``safetensors.torch.load_file(path, device)`` onto CUDA: a CUDA device text, or an
    integer device index. Loaded on the CPU, ``load_state_dict`` copies onto the model's
    device, as for torch.load."""
    for call in model.calls_to(*SAFETENSORS_LOADS):
        value = arg_or_keyword(call, 1, "device")
        if value is None:
            continue
        if _device_index(model, value):
            what = f"`{model.segment(value)}` is an integer device index, which it takes as a CUDA device"
        elif cuda_device_text(model, value, branches=False):
            what = f"`{model.segment(value)}` is a CUDA device"
        else:
            continue
        use = other_use(model, call)
        reason = "" if use is None else REVIEW.format(use=use)
        yield Finding(
            CODE,
            f"safetensors' load_file onto {what}: an XLA host has no CUDA, so the load fails; "
            'load on the CPU (device="cpu") and let load_state_dict copy onto the XLA device',
            model.span(value),
            Severity.WARNING,
            fix=Fix(
                'Load on the CPU: "cpu"',
                (Replace(model.span(value), '"cpu"'),),
                safe=not reason,
                review_reason=reason,
            ),
        )


def _empty_otherwise(model: ScriptModel, entry: DictEntry) -> ast.IfExp | None:
    """The ``X if torch.cuda.is_available() else {}`` that chooses ``entry``'s dict: False on
    an XLA host, so there the load gets no map_location at all."""
    choice = model.parent(entry.container)
    if not (isinstance(choice, ast.IfExp) and choice.body is entry.container):
        return None
    other = choice.orelse
    empty = (isinstance(other, ast.Dict) and not has_key(other, "map_location")) or (
        isinstance(other, ast.Call)
        and isinstance(other.func, ast.Name)
        and other.func.id == "dict"
        and not other.args
        and not has_key(other, "map_location")
    )
    return choice if empty and is_availability(model, choice.test) else None


def _unpacked_map_locations(model: ScriptModel) -> Iterator[Finding]:
    """``load_args = dict(map_location=f"cuda:{device_id}") if torch.cuda.is_available() else
    {}`` then ``torch.load(path, **load_args)`` (held-out 94's towards-principled-gts): on a
    CUDA host the checkpoint is mapped onto CUDA; on an XLA host the dict is empty and the
    load restores each tensor where the CUDA run saved it, which fails the same way. Mapping
    onto the CPU on every host is what load_state_dict needs."""
    for call in model.calls_to(*MAP_LOCATION_AT):
        if map_location_value(model, call) is not None:
            continue
        for kw in call.keywords:
            if kw.arg is not None or not isinstance(kw.value, ast.Name):
                continue
            for entry in entries_reaching(model, kw.value, "map_location"):
                if cuda_device_text(model, entry.value):
                    yield _unpacked_finding(model, call, kw.value.id, entry)


def _unpacked_finding(model: ScriptModel, call: ast.Call, name: str, entry: DictEntry) -> Finding:
    value = model.segment(entry.value)
    choice = _empty_otherwise(model, entry)
    message = (
        f"torch.load's `**{name}` maps the checkpoint onto CUDA (`{value}`, line "
        f"{entry.value.lineno})"
    )
    if choice is not None:
        message += (
            f" only when `{model.segment(choice.test)}`: on an XLA host it is empty and the "
            "load restores each tensor where the CUDA run saved it, which fails there too"
        )
    else:
        message += ": an XLA host has no CUDA, so the load fails"
    message += (
        '; map onto the CPU (map_location="cpu") and let load_state_dict copy onto the XLA device'
    )
    container = model.segment(entry.container)
    replaced = choice if choice is not None else entry.container
    use = other_use(model, call)
    reason = "" if use is None else REVIEW.format(use=use)
    if not reason and not only_unpacked_into(model, entry, lambda c: c is call):
        reason = f"`{name}` is used other than as this load's `**` argument; check those uses too"
    fix = None
    if container.count(value) == 1:
        fix = Fix(
            'Map onto the CPU: map_location="cpu"',
            (Replace(model.span(replaced), container.replace(value, '"cpu"')),),
            safe=not reason,
            review_reason=reason,
        )
    return Finding(
        CODE,
        message,
        model.span(entry.value),
        Severity.WARNING,
        fix=fix,
        manual=None if fix is not None else 'Map the checkpoint onto the CPU: map_location="cpu".',
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _cuda_written(model)
    yield from _unpacked_map_locations(model)
    yield from _safetensors_loads(model)
    for call in model.calls_to(*MAP_LOCATION_AT):
        value = map_location_value(model, call)
        if value is None:
            continue
        if maps_storages_to_cuda(model, value):
            message = (
                f"torch.load's map_location restores storages onto CUDA "
                f"(`{model.segment(value)}`): an XLA host has no CUDA, so a checkpoint saved on "
                'a GPU fails to load; load on the CPU (map_location="cpu") and let '
                "load_state_dict copy onto the XLA device"
            )
        elif moves_storage_to_cuda(model, value):
            message = (
                f"torch.load's map_location moves each storage onto CUDA "
                f"(`{model.segment(value.body)}`): an XLA host has no CUDA, and a storage "
                "cannot be restored onto the XLA device there; load on the CPU "
                '(map_location="cpu") and let load_state_dict copy onto the XLA device'
            )
        elif cuda_device_text(model, value, branches=False):
            message = (
                "torch.load onto a CUDA device: an XLA host has no CUDA, so the load fails; "
                'load on the CPU (map_location="cpu") and let load_state_dict copy onto the XLA '
                "device"
            )
        elif cuda_device_text(model, value):
            message = (
                f"torch.load onto the script's device `{model.segment(value)}`: once that is "
                "the XLA device (XLA101), torch.load cannot restore onto it (RuntimeError); load "
                'on the CPU (map_location="cpu") and let load_state_dict copy onto the XLA device'
            )
        else:
            continue
        use = other_use(model, call)
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
