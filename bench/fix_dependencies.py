"""Differential check: do the safe fixes, applied together as Convert applies them, still hold
when a fix they count on is not applied?

Some safe fixes are safe only because another rule's fix is applied too (XLA106's
``pl.MpDeviceLoader(loader, device)`` needs XLA101 to make ``device`` the XLA device; XLA107
leaves a loop's sync to XLA106's wrap; XLA401's step closure needs a sync after it). If the
dependent rule reads the other rule's *raw* output while the engine then silences or demotes
that fix (settings, ignore comments, launch safety), Convert writes a broken script. This
script applies only the safe fixes (``fix_source``, what Convert and ``xla-lens fix`` do) and
checks the result against a fresh analysis of it:

* ``loader-device``: a ``MpDeviceLoader(loader, device)`` the fixes added, where ``device`` is
  not provably the XLA device in the fixed script (crash at the first batch);
* ``autocast-device``: an ``autocast("xla")`` the fixes added while the fixed script still
  picks a CUDA/CPU device (XLA101 still reported): the autocast is a silent no-op there;
* ``optimizer-step``: an ``xm.optimizer_step`` the fixes added to a launched script while
  XLA101 is still reported (its all-reduce needs XLA tensors);
* ``closure-no-sync``: a step closure the fixes added in a loop that nothing syncs;
* ``silent-loop``: a loop of the converted script that nothing syncs while XLA107 is quiet on
  it (it left the sync to an XLA106 wrap that was not applied).

    python bench/fix_dependencies.py PATH... [--target modern|legacy]

prints one line per hit (``path:line: kind: detail``) and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from xla_lens.engine import analyze, fix_source
from xla_lens.engine.analysis import parse
from xla_lens.rules.base import RuleContext
from xla_lens.rules.parts.device_after_fixes import device_not_xla
from xla_lens.semantic.launch import is_launched
from xla_lens.semantic.loaders import Source, loop_source
from xla_lens.semantic.loop_syncs import loop_syncs
from xla_lens.semantic.prepared_loaders import prepared_feed


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.detail}"


def _calls(tree: ast.AST, suffix: str) -> list[ast.Call]:
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name == suffix:
                out.append(n)
    return out


def _added(before: list[ast.Call], after: list[ast.Call], before_src: str, after_src: str):
    """Calls in ``after`` whose text does not occur as often in ``before`` (the fixes wrote
    them)."""
    seen: dict[str, int] = {}
    for c in before:
        text = ast.get_source_segment(before_src, c) or ""
        seen[text] = seen.get(text, 0) + 1
    out = []
    for c in after:
        text = ast.get_source_segment(after_src, c) or ""
        if seen.get(text, 0):
            seen[text] -= 1
        else:
            out.append(c)
    return out


def _is_xla_autocast(call: ast.Call) -> bool:
    if "torch_xla" in ast.unparse(call.func):
        return True  # the legacy target's torch_xla.amp.autocast(device)
    first = call.args[0] if call.args else None
    for kw in call.keywords:
        if kw.arg == "device_type":
            first = kw.value
    return isinstance(first, ast.Constant) and first.value == "xla"


def check_text(source: str, path: str = "<script>", target: str = "modern") -> list[Hit]:
    """The dependency invariants the safe fixes break on ``source``."""
    outcome = fix_source(source, path, target=target)  # type: ignore[arg-type]
    if outcome.error is not None or not outcome.changed:
        return []
    fixed = outcome.source.lstrip("\ufeff")
    original = source.lstrip("\ufeff")
    try:
        before, model = ast.parse(original), parse(fixed, path)
    except (SyntaxError, ValueError, RecursionError):
        return [Hit(path, 1, "parse", "the fixed script does not parse")]
    after = model.tree
    final = analyze(fixed, path, target=target)  # type: ignore[arg-type]
    cuda_left = [f.span.start.line + 1 for f in final.findings if f.code == "XLA101"]
    ctx = RuleContext(target)  # type: ignore[arg-type]
    hits: list[Hit] = []

    for call in _added(
        _calls(before, "MpDeviceLoader"), _calls(after, "MpDeviceLoader"), original, fixed
    ):
        device = call.args[1] if len(call.args) > 1 else None
        if device is None:
            continue
        why = device_not_xla(model, ctx, ast.get_source_segment(fixed, device) or "", call)
        if why:
            hits.append(Hit(path, call.lineno, "loader-device", why))

    autocasts = [c for c in _calls(after, "autocast") if _is_xla_autocast(c)]
    added_autocasts = _added(
        [c for c in _calls(before, "autocast") if _is_xla_autocast(c)], autocasts, original, fixed
    )
    for call in added_autocasts:
        if cuda_left:
            hits.append(
                Hit(path, call.lineno, "autocast-device", f"XLA101 still reported at {cuda_left}")
            )
    # Not launched by XLA: world size 1, so xm.optimizer_step reduces nothing and steps on any
    # device; under the launcher it all-reduces the gradients, which must be XLA tensors.
    replicas = is_launched(model)
    for call in _added(
        _calls(before, "optimizer_step"), _calls(after, "optimizer_step"), original, fixed
    ):
        if cuda_left and replicas:
            hits.append(
                Hit(path, call.lineno, "optimizer-step", f"XLA101 still reported at {cuda_left}")
            )

    closures = _added(
        _calls(before, "add_step_closure"), _calls(after, "add_step_closure"), original, fixed
    )
    quiet107 = {f.span.start.line for f in final.findings if f.code == "XLA107"}
    converted = "torch_xla" in fixed and "torch_xla" not in original
    for loop in model.training_loops:
        source_kind, _ = loop_source(model, loop)
        if source_kind is Source.XLA or prepared_feed(model, loop) is not None:
            continue
        if loop_syncs(model, loop):
            continue
        span = model.span(loop.node)
        inside = [c for c in closures if span.start.line + 1 <= c.lineno <= span.end.line + 1]
        for c in inside:
            hits.append(Hit(path, c.lineno, "closure-no-sync", "nothing in its loop syncs"))
        reported = any(span.start.line <= ln <= span.end.line for ln in quiet107)
        if converted and not reported and not inside:
            hits.append(
                Hit(path, loop.node.lineno, "silent-loop", "nothing syncs and XLA107 is quiet")
            )
    return hits


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--target", default="modern", choices=["modern", "legacy"])
    args = parser.parse_args(argv)
    total = 0
    for file in _files(args.paths):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"{file}: skipped ({exc.__class__.__name__})", file=sys.stderr)
            continue
        for hit in check_text(text, str(file), args.target):
            print(hit)
            total += 1
    print(f"{total} hit(s) in {len(_files(args.paths))} file(s)", file=sys.stderr)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
