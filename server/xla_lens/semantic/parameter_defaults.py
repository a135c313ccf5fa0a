"""Parameters' default values, by the default's span, and whether a call passes a parameter:
a default a caller overrides says nothing about that call (nanochat's data loader defaults
``device="cuda"`` and the training script passes ``device=device``, dev corpus)."""

from __future__ import annotations

import ast

from .model import ScriptModel
from .span import Span


def parameter_defaults(model: ScriptModel) -> dict[Span, tuple[str, int]]:
    """Span of each parameter default -> (parameter name, positional index; -1 keyword-only)."""

    def build() -> dict[Span, tuple[str, int]]:
        out: dict[Span, tuple[str, int]] = {}
        for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
            args = fn.args  # type: ignore[attr-defined]
            positional = [*args.posonlyargs, *args.args]
            first = len(positional) - len(args.defaults)
            for i, default in enumerate(args.defaults):
                out[model.span(default)] = (positional[first + i].arg, first + i)
            for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                if default is not None:
                    out[model.span(default)] = (arg.arg, -1)
        return out

    return model.memo(parameter_defaults, build)


def passes(call: ast.Call, name: str, index: int) -> bool:
    """``call`` gives the parameter ``name`` (at ``index``) a value (``**kwargs``: maybe)."""
    if any(k.arg == name or k.arg is None for k in call.keywords):
        return True
    if any(isinstance(a, ast.Starred) for a in call.args):
        return True
    return 0 <= index < len(call.args)


__all__ = ["parameter_defaults", "passes"]
