"""Where a node of one parsed script is, in the units editors use.

Stdlib ``ast`` columns count UTF-8 bytes; spans here count code points, the source is split
into lines as ``ast`` numbers them, and a node's text is cut from those lines.
"""

from __future__ import annotations

import ast

from .span import Pos, Span


class SourcePositions:
    """Positions and text of nodes, for a class that has the script's ``lines`` (with their
    ends, as ``ast`` numbers them) and each node's ``parents``."""

    lines: list[str]
    parents: dict[ast.AST, ast.AST]
    # 0-based (first, last) line ranges whose text was read (comments included). A comment
    # edit elsewhere cannot change what was read, which is what lets an editor carry the
    # findings over such an edit (engine/carry_over.py); positions alone (``span``) are
    # not text reads: a comment never shifts a code column.
    text_reads: list[tuple[int, int]]

    def _col(self, lineno: int, byte_col: int) -> int:
        if lineno - 1 >= len(self.lines):
            return byte_col
        line = self.lines[lineno - 1]
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> Span:
        end_line = getattr(node, "end_lineno", None) or node.lineno
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = node.col_offset
        return Span(
            Pos(node.lineno - 1, self._col(node.lineno, node.col_offset)),
            Pos(end_line - 1, self._col(end_line, end_col)),
        )

    def segment(self, node: ast.AST) -> str:
        # ast.get_source_segment re-splits the whole source on every call (quadratic on
        # big scripts); self.lines is the same split, done once.
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_line is None or end_col is None or end_line > len(self.lines):
            return ast.unparse(node)
        first, last = node.lineno - 1, end_line - 1
        self.text_reads.append((first, last))
        if first == last:
            text = self.lines[first].encode()[node.col_offset : end_col].decode()
        else:
            text = (
                self.lines[first].encode()[node.col_offset :].decode()
                + "".join(self.lines[first + 1 : last])
                + self.lines[last].encode()[:end_col].decode()
            )
        return text or ast.unparse(node)

    def block_segment(self, node: ast.AST, stmt: ast.stmt) -> str:
        """``segment(node)`` for code that replaces ``stmt``: the engine indents every line of
        a replacement to the statement's block, so the continuation lines lose that indent
        here and keep their columns in the result."""
        text = self.segment(node)
        if any(
            isinstance(n, ast.Constant | ast.JoinedStr) and n.lineno != n.end_lineno
            for n in ast.walk(node)
        ):
            return text  # a string spanning lines: its text is not indentation
        lines = text.split("\n")
        margin = " " * stmt.col_offset
        return "\n".join(
            [lines[0], *(line.removeprefix(margin) if line.strip() else line for line in lines[1:])]
        )

    def line_text(self, line0: int) -> str:
        self.text_reads.append((line0, line0))
        return self.lines[line0].rstrip("\r\n") if 0 <= line0 < len(self.lines) else ""

    def text_lines(self, first: int, last: int) -> list[str]:
        """Lines ``first``..``last`` (0-based, inclusive) with their ends."""
        self.text_reads.append((first, last))
        return self.lines[first : last + 1]

    def in_indented_block(self, stmt: ast.stmt) -> bool:
        """False for a statement of a one-line suite (``if c: stmt``, ``for x in y: stmt``).

        The engine inserts and appends statements only in indented blocks and at module
        level, so statement fixes anchored in a one-line suite would be dropped.
        """
        parent = self.parents.get(stmt)
        if parent is None or isinstance(parent, ast.Module):
            return True
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and stmt in block:
                first = next(s for s in block if s.lineno == stmt.lineno)
                col = self._col(first.lineno, first.col_offset)
                return not self.line_text(first.lineno - 1)[:col].strip()
        return True
