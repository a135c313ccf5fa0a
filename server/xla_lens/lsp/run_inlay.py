"""Inlay hints: what the last run found at a line, at the line's end, problem first, e.g.
``recompiles: f32[8,12]→f32[7,12] · 3 compiles``.

VS Code cuts an inlay label at 43 characters by default, so a label stays within
``MAX_LABEL`` and the details (what changed, the hint, the rule's doc) go to the tooltip.
The tooltip does not repeat the diagnostic's message: VS Code shows both when the hint is
hovered. "compiles" counts graphs XLA built (uncached); cache hits are "cached".
"""

from __future__ import annotations

import asyncio
import time

from lsprotocol import types

from ..runner.events import Problem
from .core import XlaLensServer
from .positions import split_lines, units_of
from .run_messages import plural
from .run_results import LineResult, RunStore

REFRESH_INTERVAL_S = 0.4  # at most a few refreshes a second while a run streams
MAX_LABEL = 40


def _compact_change(changed: str) -> str:
    return changed.replace(" → ", "→").replace(" -> ", "→").strip()


def problem_label(p: Problem) -> str | None:
    if p.kind == "recompilation":
        changed = getattr(p, "changed", None)
        if changed:
            label = f"recompiles: {_compact_change(changed)}"
            if len(label) <= MAX_LABEL:
                return label
        kind = getattr(p, "change_kind", None)
        if kind in ("shape", "constant", "branch"):
            return f"recompiles: {kind} changed" if kind != "branch" else "recompiles: branch"
        # Runners that do not explain name the likely cause in the message only.
        return "recompiles: shape changed" if "shape changes" in p.message else "recompiles"
    if p.kind == "host-read":
        return "host read"
    if p.kind == "cpu-fallback":
        op = p.message.split(" ", 1)[0]
        label = f"CPU fallback: {op}"
        return label if op.startswith("aten::") and len(label) <= MAX_LABEL else "CPU fallback"
    if p.kind == "crash":
        return "crashed here"
    if p.kind == "no-xla":
        return "never used XLA: convert it first"
    if p.kind == "hang":
        return "hung in an XLA collective"
    return None  # compile-bound is about the whole run: a diagnostic says it


def _stats_parts(result: LineResult) -> list[str]:
    s = result.stats
    if s is None:
        return []
    parts = []
    if s.uncached_compiles:
        parts += [plural(s.uncached_compiles, "compile"), f"{s.compile_s:.1f} s"]
    cached = s.compiles - s.uncached_compiles
    if cached > 0:
        parts.append(f"{cached} cached")
    return parts


def hint_label(result: LineResult, cause_lines: dict[int, int] | None = None) -> str | None:
    """Problems first, then the compile figures while they fit in MAX_LABEL."""
    problems: list[str] = []
    for p in result.problems:
        label = problem_label(p)
        if label and label not in problems:
            problems.append(label)
    for p in result.triggered:
        line = (cause_lines or {}).get(id(p), p.line)
        label = f"recompiled: see line {line}" if line else "recompiled"
        if label not in problems:
            problems.append(label)
    parts: list[str] = []
    for part in problems + _stats_parts(result):
        if parts and len(" · ".join([*parts, part])) > MAX_LABEL:
            break  # the rest is in the tooltip
        parts.append(part)
    return " · ".join(parts) if parts else None


def _problem_details(p: Problem, cause_lines: dict[int, int] | None) -> list[str]:
    changed = getattr(p, "changed", None)
    hint = getattr(p, "hint", None)
    doc = getattr(p, "doc_url", None)
    out = []
    # VS Code shows the line's diagnostic (p.message) above this tooltip: say only the rest.
    if p.kind == "recompilation" and changed and changed not in p.message:
        kind = getattr(p, "change_kind", None) or "graph"
        out.append(f"**Recompiles here:** the {kind} changed between steps: `{changed}`")
    trigger = getattr(p, "trigger_line", None)
    if trigger and trigger != p.line and f"line {trigger}" not in p.message:
        out.append(f"The compile happened at line {trigger} (the sync or host read).")
    if hint:
        out.append(f"**Fix:** {hint}")
    if doc:
        out.append(f"[Read more]({doc})")
    return out


def hint_tooltip(
    result: LineResult, cause_lines: dict[int, int] | None = None
) -> types.MarkupContent | None:
    """Markdown, so it wraps at words; each fact once, and not the diagnostic's text."""
    sections: list[str] = []
    for p in result.problems:
        sections.extend(_problem_details(p, cause_lines))
    for p in result.triggered:
        line = (cause_lines or {}).get(id(p), p.line)
        sections.append(f"Recompiled because of line {line}: see the hint there.")
    s = result.stats
    if s is not None:
        cached = s.compiles - s.uncached_compiles
        figures = (
            f"This line: {plural(s.uncached_compiles, 'compile')} ({s.compile_s:.2f} s), "
            f"{cached} cached, {plural(s.executes, 'execution')} ({s.execute_s:.2f} s)"
        )
        sections.append(figures)
        if s.causes:
            sections.append(
                "Triggered by: " + ", ".join(f"{cause} ×{n}" for cause, n in s.causes.items())
            )
    if not sections:
        return None
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n".join(sections))


def hints_for(
    store: RunStore, uri: str, text: str, rng: types.Range, encoding: str
) -> list[types.InlayHint]:
    run = store.get(uri)
    if run is None:
        return []
    lines = split_lines(text)
    mapped = run.mapped(text)
    # Where each cause line is in the text now (1-based), for "recompiled: see line N".
    cause_lines = {id(p): line + 1 for line, r in mapped.items() for p in r.problems}
    hints = []
    for line, result in sorted(mapped.items()):
        if line >= len(lines) or not rng.start.line <= line <= rng.end.line:
            continue
        label = hint_label(result, cause_lines)
        if label is None:
            continue
        end = units_of(lines[line].rstrip("\r\n"), encoding)
        hints.append(
            types.InlayHint(
                position=types.Position(line=line, character=end),
                label=label,
                padding_left=True,
                tooltip=hint_tooltip(result, cause_lines),
            )
        )
    return hints


class Refresher:
    """Throttled workspace/inlayHint/refresh (and codeLens/refresh), only when the client
    says it supports them: a refresh request it does not expect is a protocol error."""

    def __init__(self, ls: XlaLensServer) -> None:
        self.ls = ls
        self.last = 0.0
        self.pending: asyncio.TimerHandle | None = None

    def request(self) -> None:
        if self.pending is not None:
            return
        wait = self.last + REFRESH_INTERVAL_S - time.monotonic()
        if wait <= 0:
            self.now()
        else:
            self.pending = asyncio.get_running_loop().call_later(wait, self.now)

    def now(self) -> None:
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None
        self.last = time.monotonic()
        for capability, send in (
            ("workspace.inlay_hint.refresh_support", self.ls.workspace_inlay_hint_refresh),
            ("workspace.code_lens.refresh_support", self.ls.workspace_code_lens_refresh),
        ):
            if self.ls.client_supports(capability):
                try:
                    future = send(None)
                except Exception as exc:  # transport gone: nothing to refresh
                    self.ls.log_client(f"xla-lens: refresh failed: {exc}")
                    continue
                # A client that answers with an error has simply not refreshed.
                future.add_done_callback(lambda f: f.cancelled() or f.exception())


def register(ls: XlaLensServer, store: RunStore) -> None:
    @ls.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    @ls.guarded("inlayHint", default=[])
    def inlay_hints(ls: XlaLensServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        uri = params.text_document.uri
        if uri not in ls.workspace.text_documents:
            return []
        text = ls.workspace.get_text_document(uri).source
        return hints_for(store, uri, text, params.range, ls.encoding)
