"""``pin_memory=True`` on a DataLoader (XLA403): pinned host memory serves CUDA copies only;
XLA transfers do not use it (MpDeviceLoader overlaps the copies instead). Reported at the
keyword, or at the dict entry that reaches the loader through ``**kwargs``, and removed; the
dict entry's removal needs review when the dict is used for anything but DataLoader keywords.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.frameworks import ownership
from ...semantic.kwargs_dicts import (
    DictEntry,
    entries_reaching,
    has_key,
    only_unpacked_into,
    without_entry,
)
from ...semantic.model import ScriptModel, keyword
from ...semantic.xla_branches import regions
from ..base import EditOp, Finding, Fix, RemoveKeyword, Replace, Severity

DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}


def pin_memory_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    """``DataLoader(..., pin_memory=True)`` and the dict entries that pass it in."""
    if ownership(model).device_agnostic:
        # Lightning runs the same script on CUDA, where pinning helps; on an XLA host the
        # DataLoader only warns and leaves it off (held-out 13: lit-llama's Fabric loader).
        return
    if serves_a_cuda_mode(model):
        return
    yield from _pin_memory(model, code)
    yield from _pin_memory_in_kwargs(model, code)
    yield from _pinned_tensors(model, code)


def serves_a_cuda_mode(model: ScriptModel) -> bool:
    """A script that switches between XLA and CUDA itself (``if is_xla(): ... else: ...``)
    pins for its CUDA mode; on XLA the DataLoader finds no accelerator to pin for and leaves
    it off, so removing it would only slow the CUDA mode (held-out 34: moco_v3_tpu)."""
    return regions(model).switch_line is not None


def _finding(
    model: ScriptModel, code: str, node: ast.AST, message: str, fix: Fix | None, manual: str | None
) -> Finding:
    return Finding(code, message, model.span(node), Severity.WARNING, fix=fix, manual=manual)


def _pin_memory(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in model.calls_to(*DATALOADERS):
        kw = keyword(call, "pin_memory")
        if kw is None or not (isinstance(kw.value, ast.Constant) and kw.value.value is True):
            continue
        span = model.span(call)
        ops = [RemoveKeyword(span, "pin_memory")]
        if keyword(call, "pin_memory_device") is not None:
            ops.append(RemoveKeyword(span, "pin_memory_device"))
        fix = Fix("Remove pin_memory=True", tuple(ops))
        yield _finding(model, code, kw.value, PIN_MESSAGE, fix, None)


PIN_MESSAGE = (
    "pin_memory=True pins host memory for CUDA copies: XLA transfers do not use it "
    "(MpDeviceLoader overlaps the copies instead)"
)
REVIEW_PIN_DICT = (
    "the dict `{holder}` is used for more than DataLoader keywords (read, copied or passed "
    "on elsewhere): removing its entry may change that other use"
)


def _pin_memory_in_kwargs(model: ScriptModel, code: str) -> Iterator[Finding]:
    """``kw = {"num_workers": 1, "pin_memory": True}; DataLoader(ds, **kw)``, also built
    with ``kw.update({...})`` or ``{...} if use_cuda else {}``."""
    seen: set[int] = set()
    for call in model.calls_to(*DATALOADERS):
        for kw in call.keywords:
            if kw.arg is not None or not isinstance(kw.value, ast.Name):
                continue
            for entry in entries_reaching(model, kw.value, "pin_memory"):
                value = entry.value
                if id(value) in seen or not (
                    isinstance(value, ast.Constant) and value.value is True
                ):
                    continue
                seen.add(id(value))
                message = f"{PIN_MESSAGE}; it reaches the DataLoader through `**{entry.holder}`"
                fix = _pin_dict_fix(model, entry)
                manual = None if fix else f"Remove the pin_memory entry of `{entry.holder}`."
                yield _finding(model, code, value, message, fix, manual)


def _pin_dict_fix(model: ScriptModel, entry: DictEntry) -> Fix | None:
    container = entry.container
    reason = ""
    if has_key(container, "pin_memory_device"):
        reason = "the dict also sets pin_memory_device, which only means something with pinning"
    elif not only_unpacked_into(model, entry, lambda c: model.call_name(c) in DATALOADERS):
        reason = REVIEW_PIN_DICT.format(holder=entry.holder)
    if isinstance(container, ast.Call):
        ops: tuple[EditOp, ...] = (RemoveKeyword(model.span(container), "pin_memory"),)
    else:
        code = without_entry(model, entry)
        if code is None:
            return None  # a layout the edit cannot keep: by hand
        ops = (Replace(model.span(container), code),)
    title = f"Remove the pin_memory entry of `{entry.holder}`"
    return Fix(title, ops, safe=not reason, review_reason=reason)


# Tensor factories that take ``pin_memory=``.
FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "empty",
        "zeros",
        "ones",
        "full",
        "tensor",
        "as_tensor",
        "rand",
        "randn",
        "randint",
        "arange",
        "linspace",
        "empty_strided",
        "randperm",
    )
)
PINNED_MESSAGE = (
    "pinned host memory needs a CUDA driver: on an XLA host (no CUDA) this raises "
    'RuntimeError ("Found no NVIDIA driver", measured on torch 2.9), and XLA transfers do not '
    "use pinned memory"
)
REVIEW_PIN_COPY = (
    "pin_memory() returns a pinned copy; without it the tensor itself is used, so an in-place "
    "change to one would now reach the other"
)


def _pinned_tensors(model: ScriptModel, code: str) -> Iterator[Finding]:
    """``torch.empty(..., pin_memory=True)`` (held-out 63's modded-nanogpt) and
    ``x.pin_memory()``: both raise where no CUDA driver is."""
    for call in model.calls:
        if _under_a_cuda_test(model, call):
            continue  # ``if device_type == "cuda": x.pin_memory()``: the CUDA path's own pinning
        name = model.call_name(call)
        if name in FACTORIES:
            kw = keyword(call, "pin_memory")
            if kw is None or not (isinstance(kw.value, ast.Constant) and kw.value.value is True):
                continue
            fix = Fix("Remove pin_memory=True", (RemoveKeyword(model.span(call), "pin_memory"),))
            yield _finding(model, code, kw.value, PINNED_MESSAGE, fix, None)
        elif (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "pin_memory"
            # not inside a batch class's own ``pin_memory()`` (the DataLoader's pinning
            # protocol, which runs only with ``pin_memory=True``: removed above)
            and getattr(model.enclosing_function(call), "name", "") != "pin_memory"
            and not call.args
            and not call.keywords
            and (name is None or not name.startswith("torch.utils"))
        ):
            receiver = call.func.value
            fix = Fix(
                "Drop .pin_memory()",
                (Replace(model.span(call), model.segment(receiver)),),
                safe=False,
                review_reason=REVIEW_PIN_COPY,
            )
            yield _finding(model, code, call, PINNED_MESSAGE, fix, None)


def _under_a_cuda_test(model: ScriptModel, node: ast.AST) -> bool:
    """Inside an ``if`` (or conditional expression) whose test asks about CUDA: nanoGPT's
    ``if device_type == 'cuda': x.pin_memory().to(device, non_blocking=True)`` never runs on
    XLA, where ``device_type`` is not "cuda"."""
    child = node
    for parent in model.ancestors(node):
        if isinstance(parent, ast.If | ast.IfExp) and child is not parent.test:
            if "cuda" in model.segment(parent.test).lower():
                return True
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return False
        child = parent
    return False
