"""XLA114: float16 by hand (held-out 8 H11, hlb-CIFAR10): ``net.half()``, ``batch.half()``,
``x.to(torch.float16)``. On XLA float16 is emulated or unsupported like any other float16
choice; these casts are where a script that never names a dtype variable picks it.

``.half(...)`` becomes ``.to(torch.bfloat16, ...)``: the same call shape for a module (returns
itself) and a tensor (returns a copy; ``memory_format=`` is a keyword of both). It is offered
for review only: the numbers change, and a script that checks dtypes (``p.dtype in
(torch.half, torch.float)``, ``x.dtype == torch.float16``) takes other branches after it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, method_name
from ..base import Fix, Replace

REVIEW_HALF = (
    "bfloat16 keeps float32's range with fewer mantissa bits, so the run's numbers change; "
    "convert every float16 cast of the run together (a bfloat16 model fed float16 batches "
    "fails with a dtype mismatch), and check code that tests a tensor's dtype "
    "(`x.dtype == torch.float16`), which takes another branch afterwards"
)


def _torch_alias(model: ScriptModel) -> str | None:
    for local, target in model.imports.items():
        if target == "torch":
            return local
    return None


def half_method_casts(model: ScriptModel) -> Iterator[tuple[ast.Call, Fix | None]]:
    """``X.half(...)`` calls in a script that imports torch, each with its review fix."""
    alias = _torch_alias(model)
    if alias is None:
        return
    for call in model.calls:
        if method_name(call) != "half" or not isinstance(call.func, ast.Attribute):
            continue
        if model.call_name(call) is not None:
            continue  # a qualified function named half (np.half is a type, not this)
        extra = [model.segment(a) for a in call.args]
        extra += [model.segment(k) for k in call.keywords]
        text = ", ".join([f"{alias}.bfloat16", *extra])
        # The whole call: an edit must match a node (``.half()`` alone is none).
        fix = Fix(
            f"Use .to({alias}.bfloat16) instead",
            (Replace(model.span(call), f"{model.segment(call.func.value)}.to({text})"),),
            safe=False,
            review_reason=REVIEW_HALF,
        )
        yield call, fix


def to_dtype_arguments(model: ScriptModel) -> Iterator[ast.AST]:
    """Positional dtypes of ``x.to(torch.float16)`` / ``x.to(device, torch.float16)`` /
    ``x.type(torch.half)``: no keyword names them a precision."""
    for call in model.calls:
        if method_name(call) in {"to", "type"} and isinstance(call.func, ast.Attribute):
            yield from (a for a in call.args if isinstance(a, ast.Attribute))
