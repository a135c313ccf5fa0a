"""XLA103's hand-rolled fp16 loss scaling: ``(loss * loss_scale).backward()``.

Older fp16 code (improved-diffusion, pre-AMP research scripts) scales the loss itself, keeps
fp32 master weights, unscales the gradients and skips the step when one is inf/NaN. That is
the GradScaler's job written by hand, and on XLA it is the same mistake: XLA mixed precision is
bfloat16, which needs no loss scaling, and the overflow check reads the host every step.

Only a multiplication by a *loss scale* is reported: the factor is ``2 ** e`` (or a name bound
to it), or a ``*scale*`` name inside a branch taken for fp16 (``if self.use_fp16:``). A
``loss * weight`` or a gradient-accumulation ``loss * (1 / accum)`` is not loss scaling.
No fix: dropping the scale is right only together with the bf16 switch, the master-weight copy
and the overflow check, which live elsewhere.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.arguments import local_bindings
from ...semantic.model import ScriptModel
from ..base import Finding, Severity

FP16_WORDS = ("fp16", "float16", "half")
MESSAGE = (
    "hand-rolled fp16 loss scaling (`{expr}`): XLA mixed precision is bfloat16, which needs no "
    "loss scaling (and a dynamic scale's inf/NaN check reads the host every step)"
)
MANUAL = (
    'On XLA run the model in bfloat16 (torch.autocast("xla", dtype=torch.bfloat16) or bf16 '
    "weights) and call loss.backward() without the scale; drop the gradient unscale, the fp32 "
    "master-weight copy and the overflow check that go with it."
)


def manual_loss_scaling(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in model.method_calls("backward"):
        if call.args or call.keywords or not isinstance(call.func, ast.Attribute):
            continue
        product = _product(model, call.func.value)
        if product is None:
            continue
        scale = _scale_factor(model, product)
        if scale is None:
            continue
        related: tuple = ()
        binding = _pow2_binding(model, scale)
        if binding is not None:
            related = ((model.span(binding), "the loss scale is set here"),)
        yield Finding(
            code,
            MESSAGE.format(expr=model.segment(product)),
            model.span(call),
            Severity.WARNING,
            manual=MANUAL,
            related=related,
        )


def _product(model: ScriptModel, receiver: ast.expr) -> ast.BinOp | None:
    """``loss * s`` itself, or the one local binding of ``scaled = loss * s``."""
    if isinstance(receiver, ast.Name):
        binds = local_bindings(model, receiver.id, receiver)
        receiver = binds[0].value if len(binds) == 1 and binds[0].value is not None else receiver
    if isinstance(receiver, ast.BinOp) and isinstance(receiver.op, ast.Mult):
        return receiver
    return None


def _scale_factor(model: ScriptModel, product: ast.BinOp) -> ast.expr | None:
    """The operand that is a loss scale, or None."""
    for factor in (product.right, product.left):
        if _is_pow2(factor) or _pow2_binding(model, factor) is not None:
            return factor
        if _scale_name(factor) and _under_fp16_branch(model, product):
            return factor
    return None


def _is_pow2(node: ast.expr) -> bool:
    """``2 ** e`` / ``2.0 ** e`` (the dynamic loss scale's shape)."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Pow)
        and isinstance(node.left, ast.Constant)
        and node.left.value == 2
    )


def _pow2_binding(model: ScriptModel, node: ast.expr) -> ast.stmt | None:
    if not isinstance(node, ast.Name):
        return None
    binds = local_bindings(model, node.id, node)
    if len(binds) == 1 and binds[0].value is not None and _is_pow2(binds[0].value):
        return binds[0]
    return None


def _scale_name(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    return isinstance(name, str) and "scale" in name.lower()


def _under_fp16_branch(model: ScriptModel, node: ast.AST) -> bool:
    """Inside the body of an ``if`` whose test names fp16 (``if self.use_fp16:``)."""
    child = node
    for parent in model.ancestors(node):
        if isinstance(parent, ast.If) and child is not parent.test and _names_fp16(parent.test):
            return child in parent.body
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        child = parent
    return False


def _names_fp16(test: ast.expr) -> bool:
    for n in ast.walk(test):
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
        if any(w in name.lower() for w in FP16_WORDS):
            return True
    return False
