"""XLA401's reporting calls: calls whose only job is to report a value (``print``, a logger's
``info``, ``writer.add_scalar``), and the values a format string hands them. Deferring such a
call to the end of the step keeps the program's meaning."""

from __future__ import annotations

import ast

from ...semantic.host_calls import is_builtin_call
from ...semantic.model import ScriptModel, method_name

# Calls whose only job is to report a value: deferring them to the end of the step keeps
# the program's meaning, so their fix is safe.
REPORTING_METHODS = frozenset(
    {
        "info",
        "debug",
        "warning",
        "error",
        "critical",
        "exception",
        "log",
        "write",
        "set_postfix",
        "set_postfix_str",
        "set_description",
        "add_scalar",
        "add_scalars",
        "master_print",
    }
)
NUMERIC_MODULES = frozenset({"torch", "numpy", "math", "cmath", "scipy", "jax"})


def is_reporting(model: ScriptModel, call: ast.Call) -> bool:
    if is_builtin_call(model, call, frozenset({"print"})):
        return True
    if method_name(call) not in REPORTING_METHODS:
        return False
    # ``torch.log(x)`` / ``np.log(x)`` / ``math.log(x)`` compute a logarithm, they report
    # nothing (held-out 20, leftthomas/SimCLR's loss: `torch.log(pos_sim / ...)`).
    name = model.call_name(call)
    return name is None or name.split(".")[0] not in NUMERIC_MODULES


def formatted(value: ast.expr) -> list[ast.expr]:
    """The values a ``"...".format(a, b)`` or ``"..." % (a, b)`` argument formats (held-out
    20, tacotron2: `print("... {:.6f}".format(iteration, loss, grad_norm))`), the values of a
    dict literal, else itself."""
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "format"
        and isinstance(value.func.value, ast.Constant)
        and isinstance(value.func.value.value, str)
    ):
        return [*value.args, *(k.value for k in value.keywords)]
    if (
        isinstance(value, ast.BinOp)
        and isinstance(value.op, ast.Mod)
        and isinstance(value.left, ast.Constant)
        and isinstance(value.left.value, str)
    ):
        right = value.right
        return list(right.elts) if isinstance(right, ast.Tuple) else [right]
    if isinstance(value, ast.Dict):
        # ``wandb_run.log({"train/loss": loss.detach().float()})`` (held-out 24,
        # llama-recipes): the logger reads every value it is handed.
        return [v for v in value.values if v is not None]
    return [value]


def reported_values(value: ast.expr, depth: int = 0) -> list[ast.expr]:
    """The values an argument of a reporting call shows, through string concatenation and
    nested formatting (``"iter " + repr(i) + " || Loss: %.4f" % loss``, ssd.pytorch)."""
    if depth > 8:
        return [value]
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return reported_values(value.left, depth + 1) + reported_values(value.right, depth + 1)
    shown = formatted(value)
    if shown == [value]:
        return shown
    return [v for s in shown for v in reported_values(s, depth + 1)]


__all__ = ["REPORTING_METHODS", "formatted", "is_reporting", "reported_values"]
