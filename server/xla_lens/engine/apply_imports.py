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
    if guard is not None:  # imports already in the guarded blocks count too
        existing |= {module.code_for_node(s).strip() for s in _block_imports(guard[1])}
    new = []
    for op in imports:
        if op.statement.strip() not in existing:
            new.extend(statements(op.statement, config))
            existing.add(op.statement.strip())
    if not new:
        return body
    if guard is not None:
        # The script imports torch_xla only where it is usable (``if is_torch_xla_available():
        # import torch_xla.core.xla_model as xm``, or ``if ARGS.tpu:`` in its ``__main__``
        # block): its torch_xla imports go there too, right after the last of them, or the
        # script's other mode would fail at import.
        xla = [s for s in new if _imports_torch_xla(module, s)]
        new = [s for s in new if not _imports_torch_xla(module, s)]
        body = _beside_guarded_imports(module, body, xla) or body
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
    own = [i for i, s in enumerate(body) if _is_import_line(s) and _imports_torch_xla(module, s)]
    xla = [s for s in new if _imports_torch_xla(module, s)]
    if (
        xla
        and own
        and own[0] >= insert_at
        and all(
            _is_import_line(s) or _sets_environment(module, s) for s in body[insert_at : own[0]]
        )
    ):
        # The script sets environment variables, then imports torch_xla (``os.environ[
        # "XLA_FLAGS"] = ...``: held-out 114's control): importing it before them would run
        # torch_xla's own set-up of those variables first, and a plain assignment then drops
        # torch_xla's defaults. Right after the script's first torch_xla import instead
        # (nothing before it but imports and that set-up, so no fix writes code there).
        body = [*body[: own[0] + 1], *xla, *body[own[0] + 1 :]]
        new = [s for s in new if not _imports_torch_xla(module, s)]
        if not new:
            return body
    return [*body[:insert_at], *new, *body[insert_at:]]


def _torch_xla_guard(
    module: cst.Module, body: list[cst.BaseStatement]
) -> tuple[int, cst.If] | None:
    """The first module-level ``if``/``try`` block whose code (nested blocks included, not
    functions or classes) imports torch_xla, when the module imports torch_xla nowhere else
    at its top level."""
    found = None
    for i, stmt in enumerate(body):
        if _is_import_line(stmt) and _imports_torch_xla(module, stmt):
            return None  # imported unconditionally: new imports go beside it
        if found is None and _guarded_imports(module, stmt):
            found = (i, stmt)  # type: ignore[assignment]
    return found


def _block_imports(stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
    """The import lines of an ``if``/``try`` block and of the blocks nested in it."""
    if not isinstance(stmt, cst.If | cst.Try) or not isinstance(stmt.body, cst.IndentedBlock):
        return []
    out: list[cst.BaseStatement] = []
    for s in stmt.body.body:
        out.extend([s] if _is_import_line(s) else _block_imports(s))
    return out


def _guarded_imports(module: cst.Module, stmt: cst.BaseStatement) -> bool:
    if not isinstance(stmt, cst.If | cst.Try) or not isinstance(stmt.body, cst.IndentedBlock):
        return False
    return any(
        (_is_import_line(s) and _imports_torch_xla(module, s)) or _guarded_imports(module, s)
        for s in stmt.body.body
    )


def _beside_guarded_imports(
    module: cst.Module, body: list[cst.BaseStatement], new: list[cst.BaseStatement]
) -> list[cst.BaseStatement] | None:
    """``body`` with ``new`` right after the last torch_xla import line of the first block
    (searched in source order, into nested ``if``/``try`` blocks) that has one; None when
    there is none. Held-out 67: ``if ARGS.tpu: import ... as xm`` inside ``__main__``, where
    a new import had gone to the end of the ``__main__`` block, after the launch it needs."""
    if not new:
        return body
    imports = [
        i for i, s in enumerate(body) if _is_import_line(s) and _imports_torch_xla(module, s)
    ]
    if imports:
        return [*body[: imports[-1] + 1], *new, *body[imports[-1] + 1 :]]
    for i, stmt in enumerate(body):
        if not _guarded_imports(module, stmt):
            continue
        inner = _beside_guarded_imports(module, list(stmt.body.body), new)  # type: ignore[union-attr]
        if inner is None:
            continue
        out = [*body]
        out[i] = stmt.with_changes(body=stmt.body.with_changes(body=inner))  # type: ignore[union-attr]
        return out
    return None


ENVIRONMENT_SETUP = re.compile(r"^\s*os\.(?:environ\b|putenv\()")


def _sets_environment(module: cst.Module, stmt: cst.BaseStatement) -> bool:
    """``os.environ["PJRT_DEVICE"] = "TPU"``, ``os.environ.setdefault(...)``, ``os.putenv``."""
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        ENVIRONMENT_SETUP.match(module.code_for_node(s)) for s in stmt.body
    )


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
