"""Which review fixes `fix` applies anyway, so a quick fix's title says what `check` says.

`fix` works in rounds: a fix that needs review on its own can become safe once an earlier
round's fix is in, and `fix` then applies it. `check` runs those rounds
(``engine.fix_plan.applied_later``) and says "applied by `fix` together with XLA403's fix at
line 8; on its own it needs review"; the quick fix for it says the same. The rounds cost a
`fix` run (several analyses), so they never run for diagnostics: only when a code action list
holds a review fix, once per analysed text (the ``Entry``: one document version under one
settings generation), on a worker thread, and a list waits for it only briefly (``WAIT_S``):
on a long script the first list shows the plain review title and the next ones (the editor
asks again as the cursor moves) say what `fix` does. A list answered from an older text while
the current one is being analysed uses that text's plan only when it is already known, and a
plan whose text the editor has replaced stops between its runs: neither may take the CPU
from the new text's analysis.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Iterable

from ..engine.fix_plan import AppliedWith, applied_later
from . import memory
from .core import XlaLensServer
from .state import Entry

# How long a code action list waits for a plan it started (a Fix all's worth of work: a
# second or more on a few thousand lines with many review fixes).
WAIT_S = 0.5


def _needs_plan(entry: Entry, indices: Iterable[int]) -> bool:
    findings = entry.analysis.findings
    return any((f := findings[i].fix) is not None and not f.safe for i in indices)


async def applied_with(
    ls: XlaLensServer, entry: Entry, indices: Iterable[int], current: bool
) -> dict[int, AppliedWith]:
    """Index of each finding of ``entry`` whose review fix `fix` applies in a later round (see
    ``applied_later``): started when one of ``indices`` has a review fix and ``entry`` is the
    document's ``current`` text. Waits for it at most ``WAIT_S``: past that the list is
    answered with what is known (nothing), and the plan finishes for the next request."""
    future = entry.fix_plan
    if future is None:
        if not current or not _needs_plan(entry, indices):
            return {}
        ls.fix_plans += 1
        stale = functools.partial(_replaced, ls, entry)
        future = entry.fix_plan = _start(entry, stale)
    if not future.done():
        if not current:
            return {}
        # Shielded: a request that gives up (timed out, or cancelled as the cursor moved)
        # leaves the plan to finish for the next one.
        done, _ = await asyncio.wait([asyncio.shield(future)], timeout=WAIT_S)
        if not done:
            return {}
    return future.result() or {}


def _replaced(ls: XlaLensServer, entry: Entry) -> bool:
    """Whether the editor's text is no longer ``entry``'s, or the server is shutting down
    (read from the plan's thread)."""
    if ls.stopping:
        return True
    doc = ls.workspace.text_documents.get(entry.uri)
    return doc is None or doc.version != entry.version


def _start(
    entry: Entry, stale: Callable[[], bool]
) -> asyncio.Future[dict[int, AppliedWith] | None]:
    """``_plan`` on a daemon thread: unlike the loop's executor, whose threads the interpreter
    joins at exit, it cannot hold up the server's exit while it finishes a round."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[dict[int, AppliedWith] | None] = loop.create_future()

    def settle(result: dict[int, AppliedWith] | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        result, error = None, None
        try:
            result = _plan(entry, stale)
        except Exception as exc:  # noqa: BLE001 - handed to the code action that awaits it
            error = exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:
            pass  # the loop is closed: the server has exited

    threading.Thread(target=work, name="xla-lens fix plan", daemon=True).start()
    return future


def _plan(entry: Entry, stale: Callable[[], bool]) -> dict[int, AppliedWith] | None:
    """None when the text was replaced while it ran (nothing lists actions for it any more)."""
    with memory.collector_paused_for_analysis():
        plan = applied_later(
            entry.source,
            entry.analysis.path,
            entry.settings,
            entry.target,
            entry.analysis.findings,
            stop=stale,
        )
    return None if stale() else plan
