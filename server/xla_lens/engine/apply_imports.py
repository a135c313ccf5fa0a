"""Imports a fix needs, for engine/apply.py: added after the module's leading imports
(its docstring and ``__future__`` imports stay first), once each."""

from __future__ import annotations

import re
import textwrap

import libcst as cst

from ..rules.base import AddImport

TORCH_XLA_IMPORT = re.compile(r"(?m)^\s*(?:import|from)\s+torch_xla\b")


def statements(code: str, config: cst.PartialParserConfig | None = None) -> list[cst.BaseStatement]:
    """The statements of ``code`` (a fix's text, dedented)."""
    return list(cst.parse_module(textwrap.dedent(code).strip("\n") + "\n", config=config).body)


def add_imports(
    module: cst.Module,
    body: list[cst.BaseStatement],
    imports: list[AddImport],
    config: cst.PartialParserConfig,
) -> list[cst.BaseStatement]:
    """``body`` (``module``'s) with the ``imports`` it lacks, after its leading imports."""
    existing = {
        module.code_for_node(s).strip()
        for s in body
        if isinstance(s, cst.SimpleStatementLine)
        and all(isinstance(x, cst.Import | cst.ImportFrom) for x in s.body)
    }
    guard = _torch_xla_guard(module, body)
    if guard is not None:  # imports already in the guarded block count too
        existing |= {
            module.code_for_node(s).strip()
            for s in guard[1].body.body  # type: ignore[attr-defined]
            if _is_import_line(s)
        }
    new = []
    for op in imports:
        if op.statement.strip() not in existing:
            new.extend(statements(op.statement, config))
            existing.add(op.statement.strip())
    if not new:
        return body
    if guard is not None:
        # The script imports torch_xla only where it is usable (``if is_torch_xla_available():
        # import torch_xla.core.xla_model as xm``): its torch_xla imports go there too, or
        # the script's other mode would fail at import.
        index, block = guard
        xla = [s for s in new if _imports_torch_xla(module, s)]
        new = [s for s in new if not _imports_torch_xla(module, s)]
        inner = list(block.body.body)  # type: ignore[attr-defined]
        last = max(i for i, st in enumerate(inner) if _imports_torch_xla(module, st))
        inner[last + 1 : last + 1] = xla
        body = [*body]
        body[index] = block.with_changes(body=block.body.with_changes(body=inner))
        if not new:
            return body
    # After the last import of the leading import block (docstring and __future__
    # imports stay first); with no imports, after the docstring.
    insert_at = 0
    for i, stmt in enumerate(body):
        if _is_import_line(stmt):
            insert_at = i + 1
        elif i == 0 and _is_docstring(stmt):
            insert_at = 1
        elif isinstance(stmt, cst.Try) and insert_at == i and _try_imports(stmt):
            insert_at = i + 1
        else:
            break
    return [*body[:insert_at], *new, *body[insert_at:]]


def _torch_xla_guard(
    module: cst.Module, body: list[cst.BaseStatement]
) -> tuple[int, cst.If] | None:
    """The module-level ``if <test>:`` block of only imports, torch_xla's among them, when
    the module imports torch_xla nowhere else at its top level."""
    found = None
    for i, stmt in enumerate(body):
        if _is_import_line(stmt) and _imports_torch_xla(module, stmt):
            return None  # imported unconditionally: new imports go beside it
        guarded = (isinstance(stmt, cst.If) and stmt.orelse is None) or (
            isinstance(stmt, cst.Try) and bool(stmt.handlers)  # ``except ImportError:``
        )
        if (
            found is None
            and guarded
            and isinstance(stmt.body, cst.IndentedBlock)  # type: ignore[union-attr]
            and any(_imports_torch_xla(module, s) for s in stmt.body.body)  # type: ignore[union-attr]
        ):
            found = (i, stmt)  # type: ignore[assignment]
    return found


def _imports_torch_xla(module: cst.Module, stmt: cst.BaseStatement) -> bool:
    """``import torch_xla...`` / ``from torch_xla... import`` (not ``is_torch_xla_available``)."""
    return TORCH_XLA_IMPORT.search(module.code_for_node(stmt)) is not None


def _is_import_line(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Import | cst.ImportFrom) for s in stmt.body
    )


def _try_imports(stmt: cst.Try) -> bool:
    return all(_is_import_line(s) for s in stmt.body.body)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )
