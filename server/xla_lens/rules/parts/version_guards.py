"""Code a script keeps for older torch_xla releases behind a version test that
``version_fallbacks`` (the ``else`` of ``hasattr(torch_xla, ...)``) does not cover (XLA501
leaves it alone): PositiveLoss/kwt's ``train_xla.py`` (held-out 91's control)::

    if xr is not None and hasattr(xr, "global_ordinal"):
        return int(xr.global_ordinal())
    if hasattr(xm, "get_ordinal"):
        return int(xm.get_ordinal())        # only where the new API is missing

    try:
        import torch_xla
    except ModuleNotFoundError:
        return xm.xla_device()              # rewritten, it raised UnboundLocalError

Left alone: the body of an ``if`` that tests ``hasattr(...)``, what follows an ``if
hasattr(...):`` whose body returns (the fallback when the test fails), and the handlers of
``except`` clauses for ImportError, ModuleNotFoundError or AttributeError. Such code runs
only where the current API is missing, which is what the old spelling is for.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel

FALLBACK_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})


def _tests_hasattr(test: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "hasattr"
        for n in ast.walk(test)
    )


def _returns(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return | ast.Raise)


def guarded_lines(model: ScriptModel) -> list[tuple[int, int]]:
    """1-based (first, last) line ranges of version-fallback code."""

    def compute() -> list[tuple[int, int]]:
        if "hasattr" not in model.source and "Error" not in model.source:
            return []
        ranges: list[tuple[int, int]] = []
        for node in model.nodes_of(ast.If):
            assert isinstance(node, ast.If)
            if not _tests_hasattr(node.test):
                continue
            ranges.append((node.lineno, node.end_lineno or node.lineno))
            if _returns(node.body):
                parent = model.parent(node)
                block = next(
                    (
                        b
                        for field in ("body", "orelse", "finalbody")
                        if isinstance(b := getattr(parent, field, None), list) and node in b
                    ),
                    None,
                )
                if block is not None:
                    after = block[block.index(node) + 1 :]
                    if after:
                        ranges.append((after[0].lineno, after[-1].end_lineno or after[-1].lineno))
        for node in model.nodes_of(ast.ExceptHandler):
            assert isinstance(node, ast.ExceptHandler)
            kinds = node.type
            names = (
                [e for e in kinds.elts]
                if isinstance(kinds, ast.Tuple)
                else [kinds]
                if kinds
                else []
            )
            if names and all(isinstance(n, ast.Name) and n.id in FALLBACK_ERRORS for n in names):
                ranges.append((node.lineno, node.end_lineno or node.lineno))
        return ranges

    return model.memo(guarded_lines, compute)


def in_version_guard(model: ScriptModel, line: int) -> bool:
    """Whether 1-based ``line`` is version-fallback code."""
    return any(first <= line <= last for first, last in guarded_lines(model))


__all__ = ["guarded_lines", "in_version_guard"]
