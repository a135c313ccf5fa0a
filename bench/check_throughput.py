"""Throughput of `xla-lens check` and `xla-lens fix --diff` next to torchfix 0.7.0.

Both tools are libcst-era CLIs, so both are timed as whole processes (interpreter start
included) over the same folders: the samples, and scripts of several sizes generated from
them by bench/corpus.py. Every tool gets one process per folder, as a user would run it.
Start-up is measured on its own (one tiny file) and the in-process per-file time of
``engine.analyze`` / ``engine.fix_source`` separates xla-lens's start-up from its analysis.

torchfix pins libcst<1.6, which our venv does not have, so it lives in a venv of its own
under .cache/bench-torchfix (created on first run: torchfix and its own dependencies,
flake8, PyYAML and libcst 1.5; torchfix does not need torch). Its default mode (no --fix)
computes every fix and prints the diff, the counterpart of `xla-lens fix --diff`; it is run
with --jobs 1 since xla-lens checks files in one process.

    .venv/bin/python bench/check_throughput.py [--sizes 200,2000,10000] [--copies 3]
        [--repeat 3] [--profile] [--no-torchfix]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from corpus import SAMPLES, make_script  # noqa: E402

TORCHFIX_VENV = ROOT / ".cache" / "bench-torchfix"
TORCHFIX_VERSION = "0.7.0"
# Issue 12: `check` over many files stays >= 15x torchfix (files/s, whole processes).
TARGET_RATIO = 15.0


@dataclass
class Group:
    name: str
    folder: Path
    files: list[Path]
    lines: int = 0

    def __post_init__(self) -> None:
        # Counted now: the corpus lives in a temporary folder gone before the report.
        self.lines = sum(p.read_text(encoding="utf-8").count("\n") for p in self.files)


@dataclass
class Timing:
    seconds: float
    rc: int
    stdout_lines: int
    stderr_tail: str


def torchfix_python() -> Path:
    """The torchfix venv's interpreter, creating the venv first if it is missing."""
    python = TORCHFIX_VENV / "bin" / "python"
    if python.exists():
        return python
    print(f"creating {TORCHFIX_VENV} (torchfix {TORCHFIX_VERSION}, no torch)", file=sys.stderr)
    subprocess.run(["python3", "-m", "venv", str(TORCHFIX_VENV)], check=True)
    # Its Requires-Dist is flake8, PyYAML and libcst>=1.5,<1.6; torch is not among them.
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"torchfix=={TORCHFIX_VERSION}"], check=True
    )
    return python


def build_corpus(root: Path, sizes: Sequence[int], copies: int) -> list[Group]:
    groups = []
    samples = root / "samples"
    samples.mkdir()
    files = []
    for path in sorted(SAMPLES.glob("*.py")):
        shutil.copyfile(path, samples / path.name)
        files.append(samples / path.name)
    groups.append(Group("samples", samples, files))
    for size in sizes:
        folder = root / f"gen{size}"
        folder.mkdir()
        files = []
        for seed in range(copies):
            path = folder / f"train_{size}_{seed}.py"
            path.write_text(make_script(size, seed), encoding="utf-8")
            files.append(path)
        groups.append(Group(f"generated {size:,} lines", folder, files))
    return groups


def run_process(cmd: list[str], repeat: int, cwd: Path) -> Timing:
    """Best wall time of ``repeat`` runs: the minimum is the least disturbed by the other
    work on a shared machine."""
    best: Timing | None = None
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
        elapsed = time.perf_counter() - start
        if best is None or elapsed < best.seconds:
            best = Timing(
                elapsed, proc.returncode, proc.stdout.count("\n"), proc.stderr.strip()[-300:]
            )
    assert best is not None
    return best


def in_process(files: list[Path], fn: Callable[[str, str], object], repeat: int) -> float:
    """Best total seconds of ``fn`` over ``files``, sources already read."""
    texts = [(p.read_text(encoding="utf-8"), str(p)) for p in files]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for text, path in texts:
            fn(text, path)
        best = min(best, time.perf_counter() - start)
    return best


def profile_analyze(files: list[Path], top: int, target: str) -> str:
    from xla_lens.engine import analyze

    texts = [(p.read_text(encoding="utf-8"), str(p)) for p in files]
    prof = cProfile.Profile()
    prof.enable()
    for text, path in texts:
        analyze(text, path, target=target)  # type: ignore[arg-type]
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,2000,10000")
    parser.add_argument("--copies", type=int, default=3, help="generated scripts per size")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best)")
    parser.add_argument("--no-torchfix", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile engine.analyze")
    parser.add_argument("--top", type=int, default=25, help="entries in the profile")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    from xla_lens.engine import analyze, fix_source, resolve_target
    from xla_lens.engine.config import Settings

    # The CLI resolves target=auto once per file from this interpreter's torch_xla (cached
    # per process); in-process timing uses the same target so it does the same work.
    target = resolve_target(Settings())
    tf_python = None if args.no_torchfix else torchfix_python()
    xla = [sys.executable, "-m", "xla_lens"]
    tf = [str(tf_python), "-m", "torchfix", "--jobs", "1"] if tf_python else None

    with tempfile.TemporaryDirectory(prefix="xla-lens-bench-") as tmp:
        root = Path(tmp)
        groups = build_corpus(root, sizes, args.copies)
        everything = Group("all", root, [p for g in groups for p in g.files])
        tiny = root / "tiny"
        tiny.mkdir()
        (tiny / "t.py").write_text("import torch\nx = torch.zeros(1)\n", encoding="utf-8")

        startup = {"xla-lens check": run_process([*xla, "check", str(tiny)], args.repeat, root)}
        if tf:
            startup["torchfix"] = run_process([*tf, str(tiny)], args.repeat, root)

        rows = []
        for group in [*groups, everything]:
            n = len(group.files)
            check = run_process([*xla, "check", str(group.folder)], args.repeat, root)
            diff = run_process([*xla, "fix", "--diff", str(group.folder)], args.repeat, root)
            torchfix = run_process([*tf, str(group.folder)], args.repeat, root) if tf else None
            for name, t in (("check", check), ("fix --diff", diff), ("torchfix", torchfix)):
                if t is not None and t.rc not in (0, 1):
                    print(f"warning: {name} on {group.name} exited {t.rc}: {t.stderr_tail}")
            analyse_s = in_process(
                group.files, lambda s, p: analyze(s, p, target=target), args.repeat
            )
            fix_s = in_process(
                group.files, lambda s, p: fix_source(s, p, target=target), max(1, args.repeat - 1)
            )
            rows.append((group, n, check, diff, torchfix, analyse_s, fix_s))
        profile = ""
        if args.profile:
            biggest = max(groups, key=lambda g: g.lines)
            profile = f"\ncProfile of engine.analyze over {biggest.name}:\n" + profile_analyze(
                biggest.files[:1], args.top, target
            )

    print()
    print(f"xla-lens target={target}; torchfix {TORCHFIX_VERSION} --jobs 1; best of {args.repeat}")
    print(
        "start-up (one 2-line file): "
        + ", ".join(f"{k} {v.seconds:.2f} s" for k, v in startup.items())
    )
    header = (
        f"{'corpus':<24}{'files':>6}{'lines':>8} | {'check f/s':>10}{'fix--diff f/s':>14}"
        f"{'torchfix f/s':>13}{'ratio':>7} | {'analyze ms/f':>13}{'fix_src ms/f':>13}"
    )
    print(header)
    print("-" * len(header))
    ratios = []
    for group, n, check, diff, torchfix, analyse_s, fix_s in rows:
        ratio = torchfix.seconds / check.seconds if torchfix else float("nan")
        if torchfix:
            ratios.append((group.name, ratio))
        print(
            f"{group.name:<24}{n:>6}{group.lines:>8} | {n / check.seconds:>10.2f}"
            f"{n / diff.seconds:>14.2f}"
            f"{(n / torchfix.seconds if torchfix else float('nan')):>13.2f}{ratio:>6.2f}x |"
            f" {1000 * analyse_s / n:>12.1f}{1000 * fix_s / n:>13.1f}"
        )
    print()
    print("ratio = (xla-lens check files/s) / (torchfix files/s), whole processes.")
    if ratios:
        # The target is about many files at once (the "all" corpus); each folder's own ratio
        # is shown next to it.
        overall = dict(ratios).get("all", min(r for _, r in ratios))
        verdict = "met" if overall >= TARGET_RATIO else "MISSED"
        print(
            f"target check >= {TARGET_RATIO:.0f}x torchfix over all files: {verdict} "
            f"({overall:.2f}x); per corpus: "
            + ", ".join(f"{name} {r:.2f}x" for name, r in ratios if name != "all")
        )
    if profile:
        print(profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
