"""Apply the rules' declarative edit operations to source text in one libcst pass.

libcst round-trips source exactly, so everything the operations do not touch stays
byte-identical (comments, blank lines, CRLF, tabs). Operations are anchored on spans that
come from the stdlib ``ast``; libcst's PositionProvider reports the same spans (it too
excludes parentheses and decorators), converted here to 0-based lines, except for a
parenthesised tuple and a call's sole generator (``apply_anchors``). An operation that
matches no node makes the whole fix not applicable (FixError): a fix is never applied in part.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ..rules.base import (
    AddImport,
    AppendToBody,
    EditOp,
    InsertAfter,
    InsertBefore,
    Pos,
    RemoveKeyword,
    RemoveStatement,
    Replace,
    ReplaceStatement,
    SetArgs,
    SetKeyword,
    Span,
)
from . import apply_anchors as anchors
from . import apply_comments as comments
from . import apply_emptied as emptied
from .apply_calls import edit_call, expression, replace_expression
from .apply_imports import add_imports, statements
from .stale_imports import stale_import_ops


class FixError(Exception):
    """A fix could not be applied or produced invalid code; the source is unchanged."""


@dataclass
class ApplyResult:
    code: str
    applied: int
    dropped: list[EditOp]


def _span_of(r: CodeRange) -> Span:
    return Span(Pos(r.start.line - 1, r.start.column), Pos(r.end.line - 1, r.end.column))


def _block_relative(code: str, column: int) -> str:
    """A replacement whose later lines come from the source (a call written over several
    lines, made ``Loss(...).to(device)`` from ``.cuda()``) carries their columns as written, and
    libcst indents each of them again by the block's indentation when it renders the statement:
    those lines lose that indentation here (a string spanning lines is left as it is: its text
    is not indentation)."""
    if column <= 0 or '"""' in code or "'''" in code or "\\\n" in code:
        return code
    first, *rest = code.split("\n")
    out = [first]
    for line in rest:
        width = len(line) - len(line.lstrip(" \t"))
        out.append(line[min(width, column) :])
    return "\n".join(out)


class _Applier(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, ops: Sequence[EditOp], config: cst.PartialParserConfig) -> None:
        super().__init__()
        self.config = config
        self.expr_ops: dict[Span, list[EditOp]] = defaultdict(list)
        self.stmt_ops: dict[Span, list[EditOp]] = defaultdict(list)
        self.body_ops: dict[Span, list[AppendToBody]] = defaultdict(list)
        self.imports: list[AddImport] = []
        self.leftover_lines: list[cst.EmptyLine] = []
        self.made_pass: set[int] = set()  # ``pass`` lines written into emptied blocks
        for op in ops:
            if isinstance(op, AddImport):
                if op not in self.imports:
                    self.imports.append(op)
            elif isinstance(op, AppendToBody):
                if op not in self.body_ops[op.span]:
                    self.body_ops[op.span].append(op)
            elif isinstance(op, RemoveStatement | ReplaceStatement | InsertAfter | InsertBefore):
                if op not in self.stmt_ops[op.span]:
                    self.stmt_ops[op.span].append(op)
            elif op not in self.expr_ops[op.span]:
                self.expr_ops[op.span].append(op)
        self.applied: set[EditOp] = set()
        self.used_imports: list[AddImport] = []
        # The original nodes from the module down to the one being visited: a replacement
        # needs the node that holds it (does it need parentheses there?).
        self.path: list[cst.CSTNode] = []
        # id(generator) -> the span ``ast`` gives a call's sole generator argument.
        self.generator_spans: dict[int, Span] = {}
        # Per statement being visited: comment lines its edited expressions no longer hold
        # (they go above it, so every comment of the source is kept once).
        self.lost: list[list[cst.EmptyLine]] = []

    def _span(self, node: cst.CSTNode) -> Span | None:
        try:
            return _span_of(self.get_metadata(PositionProvider, node))
        except KeyError:
            return None

    def _mark(self, op: EditOp) -> None:
        self.applied.add(op)

    # --- expressions ----------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        self.path.append(node)
        if isinstance(node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
            self.lost.append([])
        if isinstance(node, cst.Call) and self.expr_ops:
            found = anchors.sole_generator_span(node, self._span)
            if found is not None:
                self.generator_spans[id(found[0])] = found[1]
        return super().on_visit(node)

    def _expr_ops_at(self, node: cst.CSTNode) -> tuple[list[EditOp], bool]:
        """The operations anchored on ``node``, and whether their span took its innermost
        parentheses (a parenthesised tuple as ``ast`` spans it)."""
        span = self._span(node)
        ops = self.expr_ops.get(span) if span is not None else None
        if ops:
            return ops, False
        if isinstance(node, cst.Tuple | cst.GeneratorExp):
            span = anchors.paren_span(node, self._span)
            ops = self.expr_ops.get(span) if span is not None else None
            if ops:
                return ops, True
        span = self.generator_spans.get(id(node))
        return (self.expr_ops.get(span) or [] if span is not None else []), False

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        self.path.pop()
        updated = super().on_leave(original_node, updated_node)
        if isinstance(original_node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
            lost = self.lost.pop()
            if lost and isinstance(updated, cst.SimpleStatementLine | cst.BaseCompoundStatement):
                updated = updated.with_changes(leading_lines=[*updated.leading_lines, *lost])
            return updated
        if not isinstance(original_node, cst.BaseExpression) or not self.expr_ops:
            return updated
        ops, took_parens = self._expr_ops_at(original_node)
        if not ops:
            return updated
        before = updated
        # Argument edits first; a whole-node replacement wins over them.
        for op in ops:
            if isinstance(op, SetKeyword | RemoveKeyword | SetArgs) and isinstance(
                updated, cst.Call
            ):
                updated = edit_call(updated, op, self.config)
                self._mark(op)
        for op in ops:
            if isinstance(op, Replace):
                updated = self._replacement(original_node, updated, op, took_parens)
                self._mark(op)
                break
        if self.lost:
            self.lost[-1].extend(comments.lost(before, updated))
        return updated

    def _replacement(
        self, original: cst.CSTNode, updated: cst.CSTNode, op: Replace, took_parens: bool
    ) -> cst.CSTNode:
        code = op.code
        if "\n" in code:
            code = _block_relative(code, self._statement_column())
        new = replace_expression(updated, expression(code, self.config))
        parent = self.path[-1] if self.path else None
        return anchors.in_place(original, updated, parent, new, took_parens)

    def _statement_column(self) -> int:
        """The indentation of the statement being visited (0 at module level)."""
        for node in reversed(self.path):
            if isinstance(node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
                try:
                    return self.get_metadata(PositionProvider, node).start.column
                except KeyError:
                    return 0
        return 0

    # --- statements -----------------------------------------------------------------
    def _rewrite_body(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> tuple[list[cst.BaseStatement], bool]:
        out: list[cst.BaseStatement] = []
        carried_lines: list[cst.EmptyLine] = []
        changed = False
        for orig, upd in zip(original, updated, strict=True):
            before, replacement, after, closing = self._statement_ops(orig, upd)
            if before or after or closing or replacement is not upd:
                changed = True
            out.extend(before)
            if replacement is None:
                # Keep comments that sat above a removed statement (its own ones come
                # as ``closing``).
                carried_lines.extend(getattr(upd, "leading_lines", ()))
            else:
                if carried_lines and hasattr(replacement, "leading_lines"):
                    replacement = replacement.with_changes(
                        leading_lines=[*carried_lines, *replacement.leading_lines]
                    )
                    carried_lines = []
                out.append(replacement)
            if after:
                if carried_lines and hasattr(after[0], "leading_lines"):
                    after[0] = after[0].with_changes(
                        leading_lines=[*carried_lines, *after[0].leading_lines]
                    )
                    carried_lines = []
                out.extend(after)
            # Comments a replaced statement had after its last line go on below it.
            carried_lines.extend(closing)
        # Comments of statements removed at the end of a block stay at its end.
        self.leftover_lines = carried_lines
        return out, changed

    def _statement_ops(
        self, orig: cst.BaseStatement, upd: cst.BaseStatement
    ) -> tuple[
        list[cst.BaseStatement],
        cst.BaseStatement | None,
        list[cst.BaseStatement],
        list[cst.EmptyLine],
    ]:
        """(statements before, the statement or None, statements after, comment lines to
        carry below them)."""
        before: list[cst.BaseStatement] = []
        after: list[cst.BaseStatement] = []
        if isinstance(orig, cst.SimpleStatementLine):
            assert isinstance(upd, cst.SimpleStatementLine)
            kept: list[cst.BaseSmallStatement] = []
            replaced: list[cst.BaseStatement] = []
            closing: list[cst.EmptyLine] = []
            for small_orig, small_upd in zip(orig.body, upd.body, strict=True):
                span = self._span(small_orig)
                ops = self.stmt_ops.get(span, []) if span is not None else []
                removed = False
                for op in ops:
                    self._mark(op)
                    if isinstance(op, RemoveStatement):
                        removed = True
                    elif isinstance(op, ReplaceStatement):
                        removed = True
                        new, tail = comments.replacement(op.code, self.config)
                        replaced.extend(new)
                        closing.extend(tail)
                    elif isinstance(op, InsertBefore):
                        before.extend(statements(op.code, self.config))
                    elif isinstance(op, InsertAfter):
                        after.extend(statements(op.code, self.config))
                if not removed:
                    kept.append(small_upd)
            if not replaced and len(kept) == len(upd.body):
                return before, upd, after, []
            if kept:
                kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
                line: cst.BaseStatement | None = upd.with_changes(body=kept)
                after = [*replaced, *after]
            elif replaced:
                replaced = comments.keep_trailing(upd, replaced, closing)
                line = replaced[0].with_changes(
                    leading_lines=[*upd.leading_lines, *replaced[0].leading_lines]
                )
                after = [*replaced[1:], *after]
            else:
                line = None
                closing = comments.own_lines(upd)
            return before, line, after, closing
        span = self._span(orig)
        ops = self.stmt_ops.get(span, []) if span is not None else []
        kept_comments = None if ops else emptied.dropped_if(upd, self.made_pass)
        if kept_comments is not None:
            return [], None, [], kept_comments
        line = upd
        rest: list[cst.BaseStatement] = []
        closing: list[cst.EmptyLine] = []
        for op in ops:
            self._mark(op)
            if isinstance(op, RemoveStatement):
                line, closing = None, comments.own_lines(upd)
            elif isinstance(op, ReplaceStatement):
                line, rest, closing = comments.replace_compound(upd, op.code, self.config)
            elif isinstance(op, InsertBefore):
                before.extend(statements(op.code, self.config))
            elif isinstance(op, InsertAfter):
                after.extend(statements(op.code, self.config))
        if closing and after:
            # Below the replacement, above what is inserted after the statement.
            after[0] = after[0].with_changes(leading_lines=[*closing, *after[0].leading_lines])
            closing = []
        return before, line, [*rest, *after], closing

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body, changed = self._rewrite_body(original_node.body, updated_node.body)
        leftover, self.leftover_lines = self.leftover_lines, []
        if not changed:
            return updated_node
        if not body:
            filler = cst.SimpleStatementLine([cst.Pass()], leading_lines=leftover)
            self.made_pass.add(id(filler))
            body = [filler]
            leftover = []
        return updated_node.with_changes(body=body, footer=[*leftover, *updated_node.footer])

    def _append_body(self, original, updated):
        span = self._span(original)
        ops = self.body_ops.get(span) if span is not None else None
        if not ops or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        extra: list[cst.BaseStatement] = []
        for op in ops:
            self._mark(op)
            extra.extend(statements(op.code, self.config))
        block = updated.body
        return updated.with_changes(body=block.with_changes(body=[*block.body, *extra]))

    def leave_For(self, original_node, updated_node):
        return self._append_body(original_node, updated_node)

    def leave_While(self, original_node, updated_node):
        return self._append_body(original_node, updated_node)

    def leave_With(self, original_node, updated_node):
        return self._append_body(original_node, updated_node)

    def leave_FunctionDef(self, original_node, updated_node):
        return self._append_body(original_node, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body, _ = self._rewrite_body(original_node.body, updated_node.body)
        leftover, self.leftover_lines = self.leftover_lines, []
        if self.imports:
            self.applied.update(self.imports)
            body = add_imports(updated_node, body, self.imports, self.config)
        return updated_node.with_changes(body=body, footer=[*leftover, *updated_node.footer])


def apply_ops(source: str, ops: Iterable[EditOp]) -> ApplyResult:
    """Apply ``ops`` to ``source``. Raises FixError if the source does not parse with
    libcst or the result is not valid Python."""
    try:
        result = _apply_ops(source, ops)
        cleanup = stale_import_ops(source, result.code)
        if cleanup:
            code = _apply_ops(result.code, cleanup).code
            if source[:1] not in ("\n", "\r") and code[:1] in ("\n", "\r"):
                code = code.lstrip("\r\n")  # the removed import opened the file
            result.code = code
        return result
    except RecursionError:
        # libcst visits and prints recursively: an expression the stdlib parser accepts
        # (e.g. 150 nested brackets) can still exhaust the stack here.
        raise FixError("the file is too deeply nested to fix") from None


def _apply_ops(source: str, ops: Iterable[EditOp]) -> ApplyResult:
    ops = list(ops)
    if not ops:
        return ApplyResult(source, 0, [])
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise FixError(f"cannot parse the file to fix it: {exc.message}") from exc
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    applier = _Applier(ops, module.config_for_parsing)
    try:
        new_module = wrapper.visit(applier)
        dropped = [op for op in ops if op not in applier.applied]
        if dropped:
            raise FixError(_not_applicable(dropped[0]))
        code = new_module.code
    except cst.ParserSyntaxError as exc:
        raise FixError(f"a fix produced code that does not parse: {exc.message}") from exc
    except (TypeError, ValueError) as exc:
        # libcst refuses a node in a place it cannot stand (its validation, its codegen).
        raise FixError(f"a fix produced code that cannot be written: {exc}") from exc
    if source.endswith("\r") and not code.endswith(("\r", "\n")):
        # libcst drops the last line end of a file whose lines end in a bare CR.
        code += "\r"
    if code != source:
        try:
            compile(code, "<fixed>", "exec", dont_inherit=True, flags=0x400)  # ast only
        except SyntaxError as exc:
            raise FixError(f"a fix produced invalid Python: {exc.msg}") from exc
    return ApplyResult(code, len(ops), [])


def _not_applicable(op: EditOp) -> str:
    where = getattr(op, "span", None)
    line = f" at line {where.start.line + 1}" if isinstance(where, Span) else ""
    return (
        f"the fix is not applicable: its {type(op).__name__} edit{line} matches no node of "
        "the code (nothing was changed)"
    )
