"""Time ``analyze()`` itself (no language server) on generated training scripts.

Prints the median of ``--repeat`` runs of ``analyze`` on 2,000 and 10,000-line scripts
(bench/corpus.py's generator, the same text bench/lsp_latency.py opens), then the time and
peak RSS of one ``analyze`` of a ~5 MB script in a fresh subprocess (so the peak is that
file's, not the earlier runs'); with --chunked that file is parsed by
``semantic.chunked_parse`` (slices of top-level statements: a lower peak). With --profile it
prints cProfile's top functions for one size instead; with --rules the median time spent in
each rule's ``check``.

    .venv/bin/python bench/analysis_profile.py [--sizes 2000,10000] [--repeat 7] [--big-mb 5]
    .venv/bin/python bench/analysis_profile.py --big-mb 5 --sizes "" --chunked
    .venv/bin/python bench/analysis_profile.py --profile 10000 [--top 40]
    .venv/bin/python bench/analysis_profile.py --rules 10000 [--repeat 3]

The machine is shared: the load average is printed with the figures, and each time comes
with its CPU time (steadier than wall time when other work runs beside it).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "server"))

from corpus import make_script  # noqa: E402
from xla_lens.engine.analysis import analyze  # noqa: E402

# CPU per line of the largest size over the smallest's above which the bench says so.
LINEAR_SLACK = 1.4


def big_text(megabytes: float) -> str:
    per_line = len(make_script(2000)) / 2000
    return make_script(int(megabytes * 1_000_000 / per_line))


def median_ms(text: str, repeat: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of ``analyze(text)`` (CPU time is the steadier figure
    on a machine shared with other work)."""
    analyze(text, "bench.py")  # warm imports and caches
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        analyze(text, "bench.py")
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def use_chunked_parse() -> None:
    """Let ``analyze`` parse through ``parse_in_chunks`` (what the engine would do with it:
    the figures with --chunked show what that saves)."""
    import warnings

    from xla_lens.engine import analysis
    from xla_lens.semantic.chunked_parse import parse_in_chunks
    from xla_lens.semantic.model import ScriptModel

    full_parse = analysis.parse

    def parse(source: str, path: str = "<script>", previous=None) -> ScriptModel:
        if previous is not None:  # an edit: the engine's own (incremental) parse
            return full_parse(source, path, previous)
        text = source[1:] if source.startswith(analysis.BOM) else source
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = parse_in_chunks(text, path)
        return ScriptModel(text, tree, path)

    analysis.parse = parse


def big_child(megabytes: float, chunked: bool) -> None:
    """Run in a fresh process: one analysis of a big file, its time and peak RSS."""
    if chunked:
        use_chunked_parse()
    text = big_text(megabytes)
    analyze("import torch\n", "warm.py")
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start, start_cpu = time.perf_counter(), time.process_time()
    result = analyze(text, "big.py")
    took, took_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{len(text) / 1e6:.1f} MB ({text.count(chr(10))} lines): {took:.2f} s "
        f"({took_cpu:.2f} s CPU), "
        f"{len(result.findings)} findings, peak RSS {peak:.0f} MB "
        f"(before: {base:.0f} MB)"
    )


def profile(lines: int, top: int) -> None:
    text = make_script(lines) if lines > 0 else big_text(-lines / 1000)
    analyze(text, "bench.py")
    prof = cProfile.Profile()
    prof.enable()
    analyze(text, "bench.py")
    prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def per_rule(lines: int, repeat: int) -> None:
    from xla_lens.rules import registry

    totals: dict[str, list[float]] = {}
    for rule in registry.all_rules():

        def timed(model, ctx, _orig=rule.check, _code=rule.code):
            start = time.perf_counter()
            out = list(_orig(model, ctx))
            totals.setdefault(_code, []).append(time.perf_counter() - start)
            return out

        object.__setattr__(rule, "check", timed)  # a frozen dataclass; bench-only
    text = make_script(lines)
    for _ in range(repeat):
        analyze(text, "bench.py")
    for code, runs in sorted(totals.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"  {code}: {statistics.median(runs) * 1000:7.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--big-mb", type=float, default=5.0, help="0 to skip the big file")
    ap.add_argument("--profile", type=int, help="profile one size (negative: -KB of big file)")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--rules", type=int, help="median time per rule at this many lines")
    ap.add_argument(
        "--chunked", action="store_true", help="big file: parse it with parse_in_chunks"
    )
    ap.add_argument("--big-child", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.big_child:
        big_child(args.big_child, args.chunked)
        return
    if args.profile is not None:
        profile(args.profile, args.top)
        return
    if args.rules:
        per_rule(args.rules, args.repeat)
        return
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    per_line: list[tuple[int, float]] = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        wall, cpu = median_ms(make_script(size), args.repeat)
        print(f"{size:>6} lines: analyze median {wall:.0f} ms ({cpu:.0f} ms CPU)")
        per_line.append((size, cpu / size))
    # A rule that scans the whole file once per finding grows with the square of the file:
    # CPU time per line should stay flat from the smallest size to the largest (stop 38's
    # switch scan made 10,000 lines cost 1.6x per line what 2,000 did, and 5 MB 274 s).
    if len(per_line) > 1:
        (small, a), (large, b) = per_line[0], per_line[-1]
        growth = b / a
        verdict = "linear" if growth < LINEAR_SLACK else "GROWS FASTER THAN THE FILE"
        print(f"CPU per line, {large:,} vs {small:,} lines: {growth:.2f}x ({verdict})")
    if args.big_mb:
        subprocess.run([sys.executable, __file__, "--big-child", str(args.big_mb)], check=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
