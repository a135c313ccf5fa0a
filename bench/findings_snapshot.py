"""Dump every finding of ``analyze`` for a set of files as JSON (for identity checks).

Usage: findings_snapshot.py OUT.json PATH... [--skip CODE,CODE] [--target legacy|modern]
A PATH may be a directory (every *.py under it). Compare two dumps with ``diff``. Each finding
carries everything a user sees or a fix applies: message, severity, manual advice, related
spans, and the fix's title, safety, review reason and edit operations.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from xla_lens.engine.analysis import analyze  # noqa: E402
from xla_lens.semantic.xla_api import Target  # noqa: E402


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    return out


def snapshot(path: Path, skip: set[str], target: Target | None = None) -> list[dict]:
    source = path.read_text(encoding="utf-8", errors="replace")
    result = analyze(source, str(path), target=target)
    return [
        {
            "code": f.code,
            "span": [f.span.start.line, f.span.start.col, f.span.end.line, f.span.end.col],
            "severity": int(f.severity),
            "message": f.message,
            "manual": f.manual,
            "deprecated": f.deprecated,
            "related": [
                [[s.start.line, s.start.col, s.end.line, s.end.col], text] for s, text in f.related
            ],
            "fix": f.fix is not None,
            "title": f.fix.title if f.fix else None,
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
    ap.add_argument("--target", choices=("legacy", "modern"), help="default: the engine's")
    args = ap.parse_args()
    skip = {c.strip() for c in args.skip.split(",") if c.strip()}
    dump = {str(p): snapshot(p, skip, args.target) for p in _files(args.paths)}
    Path(args.out).write_text(json.dumps(dump, indent=1, sort_keys=True))
    print(f"{len(dump)} files, {sum(map(len, dump.values()))} findings -> {args.out}")


if __name__ == "__main__":
    main()
