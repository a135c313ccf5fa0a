"""Dump every finding of ``analyze`` for a set of files as JSON (for identity checks).

Usage: findings_snapshot.py OUT.json PATH... [--skip CODE,CODE]
A PATH may be a directory (every *.py under it). Compare two dumps with ``diff``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from xla_lens.engine.analysis import analyze  # noqa: E402


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    return out


def snapshot(path: Path, skip: set[str]) -> list[dict]:
    source = path.read_text(encoding="utf-8", errors="replace")
    result = analyze(source, str(path))
    return [
        {
            "code": f.code,
            "span": [f.span.start.line, f.span.start.col, f.span.end.line, f.span.end.col],
            "severity": int(f.severity),
            "message": f.message,
            "fix": f.fix is not None,
            "safe": f.fix.safe if f.fix else None,
            "review_reason": f.fix.review_reason if f.fix else None,
            # The edit operations too (builds lazy ones): a speed-up must not change a fix.
            "ops": repr(tuple(f.fix.ops)) if f.fix else None,
        }
        for f in result.findings
        if f.code not in skip
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--skip", default="", help="comma-separated rule codes to leave out")
    args = ap.parse_args()
    skip = {c.strip() for c in args.skip.split(",") if c.strip()}
    dump = {str(p): snapshot(p, skip) for p in _files(args.paths)}
    Path(args.out).write_text(json.dumps(dump, indent=1, sort_keys=True))
    print(f"{len(dump)} files, {sum(map(len, dump.values()))} findings -> {args.out}")


if __name__ == "__main__":
    main()
