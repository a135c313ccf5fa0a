"""Inlay hints: what the last run compiled at each triggering line, at the line's end, e.g.
``⟵ 3 compiles · 2.1 s · recompiles: shape changed``."""

from __future__ import annotations

import asyncio
import time

from lsprotocol import types

from ..runner.events import Problem
from .core import XlaLensServer
from .positions import split_lines, units_of
from .run_results import LineResult, RunStore

REFRESH_INTERVAL_S = 0.4  # at most a few refreshes a second while a run streams


def problem_label(p: Problem) -> str | None:
    if p.kind == "recompilation":
        # The runner names the likely cause in its message; the hint keeps only the gist.
        return "recompiles: shape changed" if "shape changes" in p.message else "recompiles"
    if p.kind == "host-read":
        return "host read"
    if p.kind == "cpu-fallback":
        op = p.message.split(" ", 1)[0]
        return f"CPU fallback: {op}" if op.startswith("aten::") else "CPU fallback"
    if p.kind == "crash":
        return "crashed here"
    return None  # compile-bound is about the whole run: a diagnostic says it


def hint_label(result: LineResult) -> str | None:
    parts: list[str] = []
    s = result.stats
    if s is not None:
        n = s.uncached_compiles
        if n:
            parts.append(f"{n} compile{'s' if n != 1 else ''} · {s.compile_s:.1f} s")
        cached = s.compiles - s.uncached_compiles
        if cached > 0:
            parts.append(f"{cached} cached")
    seen: set[str] = set()
    for p in result.problems:
        label = problem_label(p)
        if label and label not in seen:
            seen.add(label)
            parts.append(label)
    return "⟵ " + " · ".join(parts) if parts else None


def hint_tooltip(result: LineResult) -> str | None:
    lines = [f"{p.kind}: {p.message}" for p in result.problems]
    s = result.stats
    if s is not None and s.causes:
        lines.extend(f"{count}× {cause}" for cause, count in s.causes.items())
    return "\n\n".join(lines) or None


def hints_for(
    store: RunStore, uri: str, text: str, rng: types.Range, encoding: str
) -> list[types.InlayHint]:
    run = store.get(uri)
    if run is None:
        return []
    lines = split_lines(text)
    hints = []
    for line, result in sorted(run.mapped(text).items()):
        if line >= len(lines) or not rng.start.line <= line <= rng.end.line:
            continue
        label = hint_label(result)
        if label is None:
            continue
        end = units_of(lines[line].rstrip("\r\n"), encoding)
        hints.append(
            types.InlayHint(
                position=types.Position(line=line, character=end),
                label=label,
                padding_left=True,
                tooltip=hint_tooltip(result),
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
