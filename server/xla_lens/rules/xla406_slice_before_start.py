"""XLA406: a tensor slice whose negative start may reach before the first element.

Python, NumPy and eager PyTorch clamp a slice start that lies before the beginning:
``idx[:, -context_size:]`` on a prompt shorter than ``context_size`` keeps the whole prompt.
XLA does not: measured on torch 2.9.0 + torch_xla 2.9.0 (PJRT CPU), ``x[:, -10:]`` on a
``(1, 6)`` tensor on the XLA device raises ``RuntimeError: Value out of range (expected to be
in range of [-6, 5], but got -10)``. The GPT ``generate`` idiom (crop the context to the last
``block_size`` tokens) crashes on its first short prompt after the conversion.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.model import ScriptModel
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity

CODE = "XLA406"
MESSAGE = (
    "slice start `{start}` can lie before the first element: the CPU and CUDA clamp it, XLA "
    'raises ("RuntimeError: Value out of range") when `{count}` exceeds the dimension, e.g. a '
    "prompt shorter than the context"
)


def _negated(node: ast.expr | None) -> ast.expr | None:
    """``count`` of a start written ``-count`` with a computed ``count``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = node.operand
        if not isinstance(operand, ast.Constant) and not (
            isinstance(operand, ast.Call)
            and isinstance(operand.func, ast.Name)
            and operand.func.id == "min"
        ):
            return operand
    return None


def _sliced_dims(index: ast.expr) -> Iterator[tuple[int, ast.Slice]]:
    """(dimension, slice) of a multi-dimensional index (``[:, -n:]``, ``[..., -n:]``); a
    plain ``[-n:]`` may index a list or a string, which clamp everywhere."""
    if not isinstance(index, ast.Tuple):
        return
    elements = index.elts
    ellipsis = next(
        (i for i, e in enumerate(elements) if isinstance(e, ast.Constant) and e.value is ...),
        None,
    )
    for i, element in enumerate(elements):
        if isinstance(element, ast.Slice):
            yield (i if ellipsis is None or i < ellipsis else i - len(elements)), element


def _mentions(node: ast.AST, wanted: str) -> bool:
    return any(ast.unparse(n) == wanted for n in ast.walk(node) if isinstance(n, ast.expr))


def _guarded(model: ScriptModel, subscript: ast.Subscript, count: ast.expr) -> bool:
    """A size test around the slice (``idx if idx.size(1) <= n else idx[:, -n:]``, or an
    ``if`` comparing the size with ``n``) already keeps the start inside the tensor."""
    wanted = ast.unparse(count)
    for parent in model.ancestors(subscript):
        test = getattr(parent, "test", None)
        if isinstance(parent, ast.IfExp | ast.If | ast.While) and test is not None:
            text = ast.unparse(test)
            if ("size" in text or "shape" in text or "len(" in text) and _mentions(test, wanted):
                return True
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return False
    return False


GROWING_CALLS = {"torch.cat", "torch.concat", "torch.concatenate", "torch.hstack"}


def _grows_in_loop(model: ScriptModel, subscript: ast.Subscript) -> bool:
    """The sliced name is extended by concatenation in the loop around the slice (the
    generation loop's ``idx = torch.cat((idx, next_token), dim=1)``): it starts shorter than
    the window it is cropped to. A slice of a value of fixed length (a model output cut to
    its prediction horizon) is not reported."""
    receiver = subscript.value
    loop = model.innermost_loop(subscript)
    if not isinstance(receiver, ast.Name) or loop is None:
        return False
    for node in model.walk_scope(loop):
        if not isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(isinstance(t, ast.Name) and t.id == receiver.id for t in targets):
            continue
        value = node.value
        if isinstance(value, ast.Call) and model.call_name(value) in GROWING_CALLS:
            return True
    return False


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for node in model.nodes_of(ast.Subscript):
        assert isinstance(node, ast.Subscript)
        if not isinstance(node.ctx, ast.Load):
            continue
        for dim, piece in _sliced_dims(node.slice):
            count = _negated(piece.lower)
            if count is None or piece.upper is not None or piece.step is not None:
                continue
            if not _grows_in_loop(model, node) or _guarded(model, node, count):
                continue
            receiver = model.segment(node.value)
            count_text = model.segment(count)
            clamped = f"-min({count_text}, {receiver}.shape[{dim}])"
            # The receiver is a plain name (_grows_in_loop): read twice, it is the same tensor.
            fix = Fix(f"Clamp the start: {clamped}", (Replace(model.span(piece.lower), clamped),))
            yield Finding(
                CODE,
                MESSAGE.format(start=model.segment(piece.lower), count=count_text),
                model.span(piece.lower),
                Severity.WARNING,
                fix=fix,
            )


HOVER = """\
**XLA406 · slice start before the first element**

`x[:, -n:]` keeps the last `n` columns; when `x` has fewer, the CPU and CUDA clamp the start
and keep them all. On the XLA device the same slice raises
`RuntimeError: Value out of range (expected to be in range of [-6, 5], but got -10)`
(torch_xla 2.9, measured). The GPT generation idiom `idx[:, -context_size:]` hits it on every
prompt shorter than the context.

Fix: `x[:, -min(n, x.shape[1]):]` — the same slice wherever the start is inside the tensor,
and the clamped one where it is not (safe: exactly what the CPU did). Reported where the
sliced tensor grows by concatenation in the same loop (the generation loop); a size test
around the slice (`idx if idx.size(1) <= n else idx[:, -n:]`) already prevents it.
"""

RULE = Rule(
    code=CODE,
    name="slice-before-start",
    category=Category.CONVERSION,
    summary="x[:, -n:] with n larger than the dimension: clamped on CPU/CUDA, an error on XLA",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={},
)
