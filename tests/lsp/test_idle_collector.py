"""Full garbage collections run when the server is idle, not inside an analysis."""

import asyncio
import gc

from xla_lens.lsp import memory


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    monkeypatch.setattr(memory.gc, "collect", lambda *a: calls.append(1) or 0)
    return calls


def test_collects_once_idle_and_not_while_busy(monkeypatch):
    calls = _counting(monkeypatch)
    monkeypatch.setattr(memory, "IDLE_COLLECTION_AFTER_S", 0.05)
    busy = [False]

    async def scenario() -> None:
        collector = memory.IdleCollector(lambda: busy[0])
        collector.analysed()
        collector.analysed()  # a second analysis restarts the clock: still one collection
        await asyncio.sleep(0.15)
        assert calls == [1]
        busy[0] = True
        collector.analysed()
        await asyncio.sleep(0.15)
        assert calls == [1]  # work arrived meanwhile: its own analysis restarts the clock

    asyncio.run(scenario())


def test_collects_after_many_analyses_without_a_pause(monkeypatch):
    calls = _counting(monkeypatch)

    async def scenario() -> None:
        collector = memory.IdleCollector(lambda: True)
        for _ in range(memory.FULL_COLLECTION_EVERY_ANALYSES):
            collector.analysed()
        assert calls == [1]

    asyncio.run(scenario())


def test_tuned_collector_never_starts_a_full_collection_by_itself():
    before = gc.get_threshold()
    try:
        memory.tune_collector()
        assert gc.get_threshold()[2] >= 10**9
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


class _Node:
    """A container that can sit in a reference cycle and be watched by a weakref."""

    def __init__(self) -> None:
        self.other: object = None


def test_no_collection_inside_an_analysis_and_what_it_built_frozen_after():
    assert gc.isenabled()
    try:
        with memory.collector_paused_for_analysis():
            with memory.collector_paused_for_analysis():  # two documents analysed at once
                assert not gc.isenabled()
                built = [[] for _ in range(1000)]
            assert not gc.isenabled()  # the other analysis still runs
        assert gc.isenabled()
        assert gc.get_count()[0] < 100  # the young generation starts from nothing again
        assert gc.get_freeze_count() >= len(built)
    finally:
        gc.unfreeze()


def test_full_collection_frees_the_cycles_an_analysis_left_frozen():
    import weakref

    try:
        with memory.collector_paused_for_analysis():
            a, b = _Node(), _Node()
            a.other, b.other = b, a  # a replaced model and its cached facts
            watch = weakref.ref(a)
        del a, b
        gc.collect()  # an ordinary collection does not look at the frozen generation
        assert watch() is not None
        assert memory.collect_everything() >= 2
        assert watch() is None
    finally:
        gc.unfreeze()
