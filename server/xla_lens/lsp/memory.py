"""Handing memory back to the system after a large document is closed.

Python frees the objects, but the process keeps the pages: the syntax trees of a large file
hold reference cycles that only a collection frees, glibc keeps freed heap pages until asked
to trim them, and after a multi-megabyte string is freed glibc raises its mmap threshold so
the next one lands in the heap, where it fragments. On Linux with glibc we pin the threshold
and trim after each close; elsewhere only the collection runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter numbers
MMAP_THRESHOLD_BYTES = 256 * 1024
YOUNG_COLLECTION_EVERY = 10_000  # allocations (CPython's default: 700)
# Full collections are left to quiet moments (``collect_when_idle``), never to an allocation
# count: one walks every object of every cached analysis (~150 ms at 10,000 lines), holding
# the GIL, and one that fell inside an analysis stalled hovers answered meanwhile.
NO_AUTOMATIC_FULL_COLLECTION = 1_000_000_000
IDLE_COLLECTION_AFTER_S = 1.0
# Typing without a pause this long still gets a full collection every so many analyses, so
# replaced analyses (their cycles live in the oldest generation) cannot pile up.
FULL_COLLECTION_EVERY_ANALYSES = 20


def _glibc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 - absent on musl
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()


def tune_allocator() -> None:
    """Serve large blocks (document texts, JSON messages) from their own mappings, which
    go back to the system the moment they are freed."""
    if _LIBC is not None:
        _LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def tune_collector() -> None:
    """Collect garbage cycles less often, and never walk the server's own code again.

    An analysis allocates hundreds of thousands of syntax-tree and model objects; with the
    default thresholds (a young collection every 700 allocations) the collector ran so often,
    and walked the previous analyses held for hover and code actions so many times, that it
    took a third of an edit's analysis (137 -> 100 ms on 2,000 lines, 1.3 -> 0.65 s on
    10,000). Cycles are still collected, just in larger batches; ``release`` still collects
    everything when a document closes.

    The entry points switch the collector off while they import (lsprotocol alone builds
    ~570 attrs classes; collections during start-up found nothing and cost ~50 ms of the
    cold start); it is switched back on here."""
    gc.collect()
    gc.freeze()  # modules, rule tables, pygls: alive for the whole session
    gc.set_threshold(YOUNG_COLLECTION_EVERY, 10, NO_AUTOMATIC_FULL_COLLECTION)
    gc.enable()


_analyses_running = 0
_running_lock = threading.Lock()


@contextmanager
def collector_paused_for_analysis() -> Iterator[None]:
    """No garbage collection while an analysis runs on its worker thread; afterwards what
    it built (and the garbage it left) moves to the frozen generation, so the next young
    collection starts from nothing.

    A collection holds the GIL from start to end, and the event loop answering hover and
    code actions meanwhile waits for it: young collections inside an analysis took 3-13 ms
    each on 2,000 lines (the first one after an index built with the collector paused walks
    the whole index). An analysis leaves cyclic garbage (the replaced model and its cached
    facts reference each other) whichever way it runs; it waits, as before, for the full
    collection when the server is idle (``IdleCollector``), which unfreezes it first."""
    global _analyses_running
    with _running_lock:
        _analyses_running += 1
        gc.disable()
    try:
        yield
    finally:
        with _running_lock:
            _analyses_running -= 1
            if _analyses_running == 0:
                gc.freeze()
                gc.enable()


def collect_everything() -> int:
    """A full collection, the frozen generation included (analyses are frozen when they
    end, the replaced ones with them), then everything still alive frozen again."""
    gc.unfreeze()
    found = gc.collect()
    gc.freeze()
    return found


class IdleCollector:
    """Runs the full collection once the server has been idle for a moment (no analysis
    scheduled or running), or after many analyses without such a moment."""

    def __init__(self, busy: Callable[[], bool]) -> None:
        self._busy = busy
        self._timer: asyncio.TimerHandle | None = None
        self._since_full = 0

    def analysed(self) -> None:
        self._since_full += 1
        if self._since_full >= FULL_COLLECTION_EVERY_ANALYSES:
            self._collect()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(IDLE_COLLECTION_AFTER_S, self._idle)

    def _idle(self) -> None:
        self._timer = None
        if self._busy():
            # Work arrived meanwhile: its own analysis restarts the clock when it ends.
            return
        self._collect()

    def _collect(self) -> None:
        self._since_full = 0
        collect_everything()


def release() -> None:
    collect_everything()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
