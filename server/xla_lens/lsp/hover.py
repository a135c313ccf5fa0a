"""Hover: what XLA needs at the API under the cursor (from each rule's ``hover`` table),
plus the findings on that line.

Rules key their hover text by qualified API name (``torch.device``), by method
(``.cuda``), by keyword argument (``padding=`` or ``transformers.AutoTokenizer(padding=)``)
or by a module prefix (``torch_xla.core.xla_model.*``).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from functools import cache

from lsprotocol import types

from ..rules.base import Finding, Pos, Span, doc_url
from ..rules.registry import all_rules, fix_safety, get_rule, short_doc
from ..semantic.model import ScriptModel
from .core import XlaLensServer
from .documents import current_entry, is_open
from .state import Entry, LineMap


@cache
def hover_table() -> dict[str, tuple[str, ...]]:
    """API key → Markdown texts (several rules may speak about one API)."""
    table: dict[str, list[str]] = {}
    for rule in all_rules():
        for key, text in rule.hover.items():
            texts = table.setdefault(key, [])
            if text not in texts:
                texts.append(text)
    return {k: tuple(v) for k, v in table.items()}


def _contains(span: Span, pos: Pos) -> bool:
    return span.start <= pos <= span.end


def _attr_span(model: ScriptModel, node: ast.Attribute) -> Span:
    """The span of the ``.attr`` part of an attribute (where the method name is)."""
    full = model.span(node)
    return Span(Pos(full.end.line, full.end.col - len(node.attr)), full.end)


def _candidates(model: ScriptModel, node: ast.AST) -> Iterator[tuple[int, str]]:
    """(priority, key): exact names (0) beat a keyword's call (1) and module wildcards (3)."""
    if isinstance(node, ast.keyword) and node.arg:
        call = model.parent(node)
        if isinstance(call, ast.Call):
            name = model.call_name(call)
            if name:
                yield 0, f"{name}({node.arg}=)"
            if isinstance(call.func, ast.Attribute):
                yield 0, f".{call.func.attr}({node.arg}=)"
        yield 0, f"{node.arg}="
        if isinstance(call, ast.Call):
            # optim= in TrainingArguments(...): the call's own text still applies.
            for priority, key in _candidates(model, call.func):
                yield priority + 1, key
        return
    if isinstance(node, ast.Name | ast.Attribute):
        q = model.qualname(node)
        if q:
            yield 0, q
            parts = q.split(".")
            for i in range(len(parts) - 1, 0, -1):
                yield 3, ".".join(parts[:i]) + ".*"
        elif isinstance(node, ast.Attribute):
            # A method on a local object (model.cuda(), loss.item(), optimizer.step()).
            yield 0, f".{node.attr}"


def _nodes_at(model: ScriptModel, pos: Pos) -> list[ast.AST]:
    """Name/attribute/keyword nodes under ``pos``, innermost first."""
    hits: list[tuple[int, ast.AST]] = []
    for node in _walk_statements_at(model.tree, pos.line):
        if isinstance(node, ast.Attribute):
            if _contains(_attr_span(model, node), pos):
                hits.append((0, node))
            elif _contains(model.span(node), pos):
                hits.append((_size(model.span(node)), node))
        elif isinstance(node, ast.Name) and _contains(model.span(node), pos):
            hits.append((0, node))
        elif isinstance(node, ast.keyword) and node.arg and hasattr(node, "lineno"):
            name_span = Span(
                model.span(node).start,
                Pos(model.span(node).start.line, model.span(node).start.col + len(node.arg)),
            )
            if _contains(name_span, pos):
                hits.append((0, node))
    hits.sort(key=lambda h: h[0])
    return [n for _, n in hits]


def _walk_statements_at(tree: ast.Module, line: int) -> Iterator[ast.AST]:
    """``ast.walk`` of the module restricted to the nodes whose lines hold ``line``
    (0-based), in the same order: every node lies inside its parent's lines, so a hover
    on a 100,000-line file walks one line of one statement, not the file."""
    roots = [
        stmt
        for stmt in tree.body
        if min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())]) - 1
        <= line
        <= (stmt.end_lineno or stmt.lineno) - 1
    ]
    todo = deque(roots)
    wanted = line + 1  # ast lines are 1-based
    while todo:
        node = todo.popleft()
        first = getattr(node, "lineno", None)
        if first is not None:
            # A node off the line (and all inside it) cannot be under the cursor; only
            # decorators lie before their definition's line.
            decorators = getattr(node, "decorator_list", None)
            if decorators:
                first = min(first, *(d.lineno for d in decorators))
            if not first <= wanted <= (getattr(node, "end_lineno", None) or first):
                continue
        todo.extend(ast.iter_child_nodes(node))
        yield node


def _size(span: Span) -> int:
    return (span.end.line - span.start.line) * 10_000 + span.end.col - span.start.col


def api_hover(model: ScriptModel, pos: Pos) -> tuple[list[str], Span | None]:
    table = hover_table()
    found = [
        (priority, depth, key, node)
        for depth, node in enumerate(_nodes_at(model, pos))
        for priority, key in _candidates(model, node)
        if key in table
    ]
    if not found:
        return [], None
    _, _, key, node = min(found, key=lambda f: (f[0], f[1]))
    return list(table[key]), model.span(node)


def _finding_text(f: Finding) -> str:
    lines = [f"**{f.code}** {f.message}"]
    if f.fix is not None:
        lines.append(f"Fix: {f.fix.title}" + ("" if f.fix.safe else " (review: changes behaviour)"))
    elif f.manual:
        lines.append(f"By hand: {f.manual}")
    return "  \n".join(lines)


def _rule_text(code: str) -> str | None:
    """The rule's short form, its fix-safety line and a link to its page."""
    rule = get_rule(code)
    if rule is None:
        return None
    text = f"*{rule.code} {rule.name}*: {short_doc(rule)}"
    safety = fix_safety(rule)
    if safety:
        text += f"  \nFix safety: {safety}"
    return text + f"  \n[{rule.code} documentation]({doc_url(rule)})"


def hover_for(entry: Entry, position: types.Position) -> types.Hover | None:
    model = entry.analysis.model
    if model is None:
        return None
    pos = entry.pos(position)
    texts, span = api_hover(model, pos)
    on_line = [
        f for f in entry.analysis.findings if f.span.start.line <= pos.line <= f.span.end.line
    ]
    under = [f for f in on_line if _contains(f.span, pos)]
    if not texts and not under:
        return None
    return types.Hover(
        contents=_markdown(texts, on_line),
        range=entry.range(span) if span is not None else entry.range(under[0].span),
    )


def _markdown(texts: list[str], on_line: list[Finding]) -> types.MarkupContent:
    parts = list(texts)
    if on_line:
        parts.append(
            "**xla-lens on this line**\n\n" + "\n\n".join(_finding_text(f) for f in on_line)
        )
        about = [_rule_text(code) for code in dict.fromkeys(f.code for f in on_line)]
        if any(about):
            parts.append("\n\n".join(text for text in about if text))
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts))


def register(ls: XlaLensServer) -> None:
    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    @ls.guarded("hover")
    async def hover(ls: XlaLensServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        if not is_open(ls, uri):
            return None
        if ls.cache.get(uri, ls.workspace.get_text_document(uri).version) is None:
            answered, hover = stale_hover(ls, uri, params.position)
            if answered:
                return hover
        entry = await current_entry(ls, uri)
        if entry is None or not entry.ok:
            return None
        return hover_for(entry, params.position)


def stale_hover(
    ls: XlaLensServer, uri: str, position: types.Position
) -> tuple[bool, types.Hover | None]:
    """While the current text's analysis is pending: (True, hover) from the last analysis
    that parsed when the hovered line, and the range the answer covers, are unchanged since
    that analysis (the answer is as current as the diagnostics on screen); (False, None)
    when it cannot tell, and the caller waits for the pending analysis."""
    state = ls.cache.docs.get(uri)
    last = state.last_good if state else None
    if last is None or last.generation != ls.generation:
        return False, None
    doc = ls.workspace.get_text_document(uri)
    mapping = last.line_map_to(doc.version, doc.source)
    old_line = mapping.to_old(position.line)
    if old_line is None:
        return True, _edited_line_hover(last, mapping, position)
    hover = hover_for(last, types.Position(old_line, position.character))
    if hover is None:
        return True, None
    if hover.range is None:
        return True, hover
    moved = mapping.range_to_new(hover.range)
    if moved is None:
        return False, None
    return True, types.Hover(contents=hover.contents, range=moved)


def _edited_line_hover(
    last: Entry, mapping: LineMap, position: types.Position
) -> types.Hover | None:
    """On a line the pending edit changed, the last analysis knows only the findings whose
    range encloses the whole edit (a loop around the edited line): those, moved to the new
    text; the API text of the new line comes with the pending analysis."""
    first_changed = mapping.prefix
    last_changed = mapping.old_count - mapping.suffix - 1
    enclosing = []
    line_count = len(last.lines)
    for f in last.analysis.findings:
        # The range's lines are the span's (clamped to the text): skip the findings that
        # cannot enclose the edit before converting columns (a 10,000-line file has ~1,000).
        if f.span.end.line <= last_changed or min(f.span.start.line, line_count) >= first_changed:
            continue
        old = last.range(f.span)
        if old.start.line < first_changed and old.end.line > last_changed:
            new = types.Range(
                old.start, types.Position(old.end.line + mapping.shift, old.end.character)
            )
            if new.start.line <= position.line <= new.end.line:
                enclosing.append((f, new))
    if not enclosing:
        return None
    return types.Hover(contents=_markdown([], [f for f, _ in enclosing]), range=enclosing[0][1])
