"""Options a script refuses together with its own XLA mode.

``if self.fp16 and use_tpu: raise Exception("fp16 is not available when using TPUs")``
(wtfml's engine, held-out 158): in XLA mode ``fp16`` is off, so every ``if self.fp16:`` block
(its CUDA autocast, its GradScaler) is the CUDA side of the script's own switch, like the
``else`` of ``if use_tpu:``. Pure analysis over the stdlib ``ast``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .model import ScriptModel

STOPS = (ast.Raise,)


def _option_forms(option: ast.expr) -> list[ast.expr]:
    """``fp16`` and ``self.fp16`` are one option: a constructor stores its parameter."""
    forms = [option]
    if isinstance(option, ast.Name):
        forms.append(
            ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=option.id, ctx=ast.Load())
        )
    elif (
        isinstance(option, ast.Attribute)
        and isinstance(option.value, ast.Name)
        and option.value.id == "self"
    ):
        forms.append(ast.Name(id=option.attr, ctx=ast.Load()))
    return forms


def refused_with_xla_mode(
    model: ScriptModel, mode_flag: Callable[[ast.expr], bool]
) -> dict[str, int]:
    """``ast.dump`` of each option the script refuses in XLA mode -> the refusal's line: an
    ``if`` whose body only raises and whose test ``and``s an XLA mode flag (not negated) with
    plain options (names or attributes, not negated)."""
    found: dict[str, int] = {}
    for node in model.nodes_of(ast.If):
        assert isinstance(node, ast.If)
        test = node.test
        if not (
            isinstance(test, ast.BoolOp)
            and isinstance(test.op, ast.And)
            and len(node.body) == 1
            and isinstance(node.body[0], STOPS)
            and not node.orelse
        ):
            continue
        modes = [v for v in test.values if isinstance(v, ast.Name | ast.Attribute) and mode_flag(v)]
        options = [
            v for v in test.values if isinstance(v, ast.Name | ast.Attribute) and not mode_flag(v)
        ]
        if not modes or len(modes) + len(options) != len(test.values):
            continue
        for option in options:
            for form in _option_forms(option):
                found.setdefault(ast.dump(form), node.lineno)
    return found


__all__ = ["refused_with_xla_mode"]
