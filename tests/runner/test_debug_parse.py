"""The PT_XLA_DEBUG_LEVEL=2 parser on real torch_xla 2.9 output (captured from a CPU run of
data/debug_level2_t1_source.py.txt with PT_XLA_DEBUG=1, paths rewritten)."""

from pathlib import Path

from xla_lens.runner.debug_parse import Block, DebugParser, FallbackSite, ProfilerLine

from .conftest import DATA


def parse(path: Path) -> list:
    parser = DebugParser()
    out = []
    offset = 0
    for line in path.read_bytes().splitlines(keepends=True):
        out += parser.feed(line.decode(), offset)
        offset += len(line)
    return out + parser.finish()


def test_blocks_are_compile_then_execute_with_cause_hash_and_frames():
    records = parse(DATA / "debug_level2_t1.txt")
    blocks = [r for r in records if isinstance(r, Block)]
    kinds = [b.kind for b in blocks]
    # 4 steps, each: item() compiles+executes, sync compiles+executes; 6 uncached compiles.
    assert kinds.count("execute") == 8
    assert kinds.count("compile") == 6
    first = blocks[0]
    assert first.kind == "compile"
    assert (
        first.cause == "most likely user code trying to access tensor value before torch_xla.sync"
    )
    assert first.graph_hash == "b65820fd9114b880c5ef795280cdc85e"
    assert (first.inputs, first.outputs) == (1, 1)
    assert [(f.function, f.file, f.line) for f in first.frames] == [
        ("<module>", "/work/example/t1.py", 10)
    ]
    sync = blocks[2]
    assert sync.kind == "compile" and sync.cause == "user torch_xla.sync"
    assert sync.frames[0].function == "sync" and sync.frames[-1].line == 11
    assert blocks[1].kind == "execute" and blocks[1].graph_hash == first.graph_hash
    offsets = [b.offset for b in blocks]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_profiler_lines_and_fallback_sites():
    records = parse(DATA / "debug_level2_t1.txt")
    prof = [r.text for r in records if isinstance(r, ProfilerLine)]
    assert prof[-1] == "TransferFromDeviceTime too frequent: 4 counts during 4 steps"
    sites = [r for r in records if isinstance(r, FallbackSite)]
    assert [(s.count, [(f.file, f.line) for f in s.frames]) for s in sites] == [
        (4, [("/work/example/t1.py", 10)])
    ]
