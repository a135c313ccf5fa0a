"""Declarative edit operations: what a fix changes, anchored on ``ast`` spans.

Rules describe edits with these; the engine applies them in one libcst pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from .span import Span

# --- Edit operations -------------------------------------------------------------
# Every operation is anchored on the span of an existing node, exactly as the stdlib
# ``ast`` reports it (converted to code points). The engine matches spans to libcst
# nodes; an operation whose anchor is not found is dropped (never applied elsewhere).


@dataclass(frozen=True)
class Replace:
    """Replace the expression at ``span`` with ``code`` (a Python expression)."""

    span: Span
    code: str


@dataclass(frozen=True)
class SetKeyword:
    """Add ``name=code`` to the call at ``span``, or replace that keyword's value."""

    span: Span
    name: str
    code: str


@dataclass(frozen=True)
class RemoveKeyword:
    span: Span
    name: str


@dataclass(frozen=True)
class SetArgs:
    """Replace all arguments of the call at ``span`` with ``code`` (argument list text)."""

    span: Span
    code: str


@dataclass(frozen=True)
class RemoveStatement:
    """Remove the statement at ``span`` (a ``pass`` keeps an emptied block valid)."""

    span: Span


@dataclass(frozen=True)
class ReplaceStatement:
    """Replace the statement at ``span`` with one or more statements of ``code``."""

    span: Span
    code: str


@dataclass(frozen=True)
class InsertAfter:
    """Insert the statements of ``code`` after the statement at ``span``."""

    span: Span
    code: str


@dataclass(frozen=True)
class InsertBefore:
    span: Span
    code: str


@dataclass(frozen=True)
class AppendToBody:
    """Append the statements of ``code`` at the end of the body of the compound
    statement (``for``/``while``/``def``/``with``) at ``span``."""

    span: Span
    code: str


@dataclass(frozen=True)
class AddImport:
    """Ensure ``statement`` (``import a.b as c`` / ``from a import b``) is at module top."""

    statement: str


EditOp = (
    Replace
    | SetKeyword
    | RemoveKeyword
    | SetArgs
    | RemoveStatement
    | ReplaceStatement
    | InsertAfter
    | InsertBefore
    | AppendToBody
    | AddImport
)
