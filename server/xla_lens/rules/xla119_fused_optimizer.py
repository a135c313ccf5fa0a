"""XLA119: ``fused=True`` on a torch.optim optimizer whose parameters live on the XLA device.

The fused optimizer kernels exist for CUDA, CPU, MPS, XPU, HPU and MTIA only. Measured on
torch 2.9.0 + torch_xla 2.9.0: ``torch.optim.AdamW(params, fused=True)`` with parameters on
the XLA device raises ``RuntimeError: `fused=True` requires all the params to be floating
point Tensors of supported devices`` when it is built, so a converted script stops before
its first step. Without ``fused`` the optimizer runs its default (for-each) implementation of
the same update, which XLA traces into the step graph anyway.

``fused=True`` also reaches the optimizer through a keyword dict (LlamaGen's
``extra_args = dict(fused=True) if fused_available else dict()``, then ``**extra_args``):
reported when the dict is chosen by nothing, or by the ``"fused" in
inspect.signature(...).parameters`` test (True on every torch that has fused=); any other
test is like ``fused=<expression>`` and left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from ..semantic.kwargs_dicts import DictEntry, entries_reaching, only_unpacked_into, without_entry
from ..semantic.model import ScriptModel, const_str, keyword
from ..semantic.precision import autocast_calls
from .base import (
    Category,
    Finding,
    Fix,
    RemoveKeyword,
    Replace,
    Rule,
    RuleContext,
    Severity,
)
from .parts.device_held import device_held

CODE = "XLA119"
FUSED_OPTIMIZERS = (
    "torch.optim.Adam",
    "torch.optim.AdamW",
    "torch.optim.SGD",
    "torch.optim.Adagrad",
    "torch.optim.adam.Adam",
    "torch.optim.adamw.AdamW",
    "torch.optim.sgd.SGD",
    "torch.optim.adagrad.Adagrad",
)
# torch_xla's sync-free optimizers subclass torch.optim's and take fused= too (XLA104 swaps the
# class and keeps the arguments); run with torch_xla 2.9 they are built, then raise at the
# first step.
SYNCFREE_OPTIMIZERS = tuple(
    f"torch_xla.amp.syncfree.{m}{c}"
    for c in ("Adam", "AdamW", "SGD")
    for m in ("", f"{c.lower()}.")
)
FUSED_OPTIMIZERS = FUSED_OPTIMIZERS + SYNCFREE_OPTIMIZERS
MESSAGE = (
    "{name}(fused=True) has no XLA kernel: with the parameters on the XLA device it raises "
    'RuntimeError ("`fused=True` requires ... Tensors of supported devices") {when}; drop '
    "fused= (the default implementation computes the same update, and XLA fuses the step "
    "graph itself)"
)


def _message(model: ScriptModel, call: ast.Call) -> tuple[str, str]:
    """The optimizer's name as shown and the message about it."""
    qualified = model.call_name(call) or "torch.optim"
    name = qualified.replace("torch.optim.", "", 1)
    when = "at its first step" if qualified in SYNCFREE_OPTIMIZERS else "when it is built"
    return name, MESSAGE.format(name=name, when=when)


def _fused_true(call: ast.Call) -> ast.keyword | None:
    found = keyword(call, "fused")
    if found is None:
        return None
    value = found.value
    return found if isinstance(value, ast.Constant) and value.value is True else None


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.calls_to(*FUSED_OPTIMIZERS):
        if _fused_true(call) is None:
            # fused=<expression>: build-nanogpt's `fused_available and device_type == "cuda"`
            # is already False on XLA; an unknown expression is not guessed at.
            continue
        _, message = _message(model, call)
        span = model.span(call)
        fix = Fix("Drop fused=True", (RemoveKeyword(span, "fused"),))
        review = _review_reason(model, ctx)
        if review is not None:
            fix = replace(fix, safe=False, review_reason=review)
        yield Finding(CODE, message, span, Severity.ERROR, fix=fix)
    yield from _fused_in_dicts(model, ctx)


def _fused_in_dicts(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    """``fused=True`` in a dict unpacked into the optimizer call (``**extra_args``)."""
    seen: set[int] = set()
    for call in model.calls_to(*FUSED_OPTIMIZERS):
        for kw in call.keywords:
            if kw.arg is not None or not isinstance(kw.value, ast.Name):
                continue
            for entry in entries_reaching(model, kw.value, "fused"):
                value = entry.value
                if id(value) in seen or not (
                    isinstance(value, ast.Constant) and value.value is True
                ):
                    continue
                if not _chosen_unconditionally(model, entry.container, call):
                    continue
                seen.add(id(value))
                name, message = _message(model, call)
                message = (
                    f"{message}; fused=True reaches {name} on line "
                    f"{call.lineno} through `**{entry.holder}`"
                )
                fix = _dict_fix(model, ctx, entry)
                manual = None if fix else f"Remove the fused entry of `{entry.holder}`."
                yield Finding(
                    CODE, message, model.span(value), Severity.ERROR, fix=fix, manual=manual
                )


def _dict_fix(model: ScriptModel, ctx: RuleContext, entry: DictEntry) -> Fix | None:
    container = entry.container
    if isinstance(container, ast.Call):
        op: RemoveKeyword | Replace = RemoveKeyword(model.span(container), "fused")
    else:
        code = without_entry(model, entry)
        if code is None:
            return None  # a layout the edit cannot keep: by hand
        op = Replace(model.span(container), code)
    review = _review_reason(model, ctx)
    if review is None and not only_unpacked_into(
        model, entry, lambda c: model.call_name(c) in FUSED_OPTIMIZERS
    ):
        review = (
            f"the dict `{entry.holder}` is used for more than optimizer keywords (read, "
            "copied or passed on elsewhere): removing its entry may change that other use"
        )
    fix = Fix(f"Remove the fused entry of `{entry.holder}`", (op,))
    return fix if review is None else replace(fix, safe=False, review_reason=review)


def _chosen_unconditionally(model: ScriptModel, container: ast.AST, call: ast.Call) -> bool:
    """Whether the dict holding fused=True reaches ``call`` on XLA: chosen by no test, or
    by the signature test only (``dict(fused=True) if fused_available else dict()``). Any
    other test (``use_fused = fused_available and device_type == "cuda"``) may be False on
    XLA, like the ``fused=<expression>`` keyword, and is not guessed at."""
    around_call = set(map(id, model.ancestors(call)))
    child: ast.AST = container
    for parent in model.ancestors(container):
        if id(parent) in around_call:
            return True
        if isinstance(parent, ast.IfExp | ast.If) and child is not parent.test:
            in_body = child is parent.body or (
                isinstance(parent.body, list) and child in parent.body
            )
            if not in_body or not _signature_test(model, parent.test, 0):
                return False
        child = parent
    return True


def _signature_test(model: ScriptModel, test: ast.AST, depth: int) -> bool:
    """``"fused" in inspect.signature(torch.optim.AdamW).parameters``, a name bound only to
    it, or an ``and`` of such: True on every torch whose optimizers take fused=."""
    if depth > 3:
        return False
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return all(_signature_test(model, v, depth + 1) for v in test.values)
    if isinstance(test, ast.Name):
        values = model.assigned_from(test.id)
        return bool(values) and all(_signature_test(model, v, depth + 1) for v in values)
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.In)
        and const_str(test.left) == "fused"
        and any(
            isinstance(n, ast.Call) and model.call_name(n) == "inspect.signature"
            for n in ast.walk(test.comparators[0])
        )
    )


def _review_reason(model: ScriptModel, ctx: RuleContext) -> str | None:
    """Why dropping fused=True may change the numbers: the parameters stay on CUDA after
    Convert (the fused kernel would still run there), or they are kept in bfloat16/float16,
    where the fused kernel (fp32 math inside) and the default one round differently."""
    held = device_held(model, ctx.target)
    if held is not None:
        return f"{held}: on CUDA the fused kernel still runs and rounds differently"
    low = low_precision_weights(model)
    if low is not None:
        return (
            f"line {low.lineno} keeps tensors in {model.segment(low)[:40]}: in low precision "  # type: ignore[attr-defined]
            "the default optimizer rounds differently from the fused one (the update is the "
            "same in exact arithmetic)"
        )
    return None


LOW_PRECISION = {"torch.bfloat16", "torch.float16", "torch.half"}


def low_precision_weights(model: ScriptModel) -> ast.AST | None:
    """The first place the script may keep weights in bfloat16/float16 (``.half()``,
    ``.bfloat16()``, a low-precision dtype anywhere but an autocast's)."""
    in_autocast = {
        id(n)
        for call in autocast_calls(model)
        for kw in call.keywords
        if kw.arg == "dtype"
        for n in ast.walk(kw.value)
    }
    found: list[ast.AST] = [
        call for call in model.method_calls("half", "bfloat16") if not call.args
    ]
    found += [
        node
        for node in model.nodes_of(ast.Attribute)
        if id(node) not in in_autocast and model.qualname(node) in LOW_PRECISION
    ]
    return min(found, key=lambda n: (n.lineno, n.col_offset), default=None)  # type: ignore[attr-defined]


HOVER = """\
**XLA119 · fused optimizers have no XLA kernel**

`torch.optim.Adam/AdamW/SGD/Adagrad(..., fused=True)` run one CUDA (or CPU, MPS, XPU) kernel
per step. There is none for XLA: measured on torch 2.9.0 + torch_xla 2.9.0, building the
optimizer over parameters on the XLA device raises `RuntimeError: `fused=True` requires all
the params to be floating point Tensors of supported devices`.

Fix: drop `fused=True` (safe: the default implementation computes the same update; XLA
compiles the whole step, optimizer included, into one graph). `foreach=True` and
`capturable=True` work on XLA and are left alone.
"""

RULE = Rule(
    code=CODE,
    name="fused-optimizer",
    category=Category.CONVERSION,
    summary="torch.optim optimizer with fused=True → drop it (no fused kernel for XLA tensors)",
    severity=Severity.ERROR,
    check=check,
    has_fix=True,
    hover={f"{name}(fused=)": HOVER for name in FUSED_OPTIMIZERS},
)
