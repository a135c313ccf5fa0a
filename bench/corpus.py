"""Realistic big training scripts, generated from the samples, for the benches.

A generated script is one import block (the union of the samples' imports) followed by
copies of the samples' top-level code, each copy with its top-level names renamed
(``main`` -> ``main_3``, ``Net`` -> ``Net_3``) so the copies do not shadow each other and
every training loop, device string and AMP call the rules look for appears many times.
Copies are whole samples while they fit, then the smallest self-contained parts of a sample
(a definition plus the top-level names it uses), so a script has exactly the asked number of
lines with as little filler as possible. The same ``(lines, seed)`` gives the same text.

    .venv/bin/python bench/corpus.py OUT_DIR [--sizes 200,2000,10000] [--seeds 0] [--no-samples]
"""

from __future__ import annotations

import argparse
import ast
import io
import random
import shutil
import sys
import tokenize
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
DEFAULT_SIZES = (200, 2000, 10000)


@dataclass(frozen=True)
class _Part:
    """Top-level statements of one sample (with the comments above them) that only use
    names defined among themselves or imported, so the part runs on its own."""

    text: str
    names: frozenset[str]
    lines: int


@dataclass(frozen=True)
class _Sample:
    name: str
    imports: tuple[str, ...]
    whole: _Part
    parts: tuple[_Part, ...]


def _defined(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Assign):
        return {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return {stmt.target.id}
    return set()


def _is_main_guard(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.If)
        and isinstance(stmt.test, ast.Compare)
        and isinstance(stmt.test.left, ast.Name)
        and stmt.test.left.id == "__name__"
    )


def _load(path: Path) -> _Sample:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    imports: list[str] = []
    chunks: list[tuple[ast.stmt, str]] = []
    prev_end = 0
    for i, stmt in enumerate(tree.body):
        start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
        end = stmt.end_lineno or stmt.lineno
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            imports.append("".join(lines[start - 1 : end]).rstrip("\n"))
        elif i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            pass  # the module docstring describes the sample, not the generated script
        elif not _is_main_guard(stmt):
            # Blank lines and comments between the previous statement and this one belong
            # to this one: comments in real scripts sit above what they explain.
            chunks.append((stmt, "".join(lines[prev_end:end])))
        prev_end = end
    defined: dict[str, int] = {}
    for index, (stmt, _) in enumerate(chunks):
        for name in _defined(stmt):
            defined[name] = index
    uses: list[set[int]] = []
    for stmt, _ in chunks:
        used = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        uses.append({defined[n] for n in used if n in defined})

    def closure(index: int) -> list[int]:
        seen = {index}
        todo = [index]
        while todo:
            for dep in uses[todo.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return sorted(seen)

    def part(indices: list[int]) -> _Part:
        text = "".join(chunks[i][1] for i in indices)
        text = "\n\n" + text.lstrip("\n")
        names = frozenset(n for i in indices for n in _defined(chunks[i][0]))
        return _Part(text, names, text.count("\n"))

    parts = {tuple(closure(i)) for i in range(len(chunks))}
    return _Sample(
        path.stem,
        tuple(imports),
        part(list(range(len(chunks)))),
        tuple(sorted((part(list(p)) for p in parts), key=lambda p: (-p.lines, p.text))),
    )


@cache
def _samples() -> tuple[_Sample, ...]:
    # Only the CUDA samples: a script that already imports torch_xla counts as converted
    # to several rules, which is not the input the tools are timed on.
    loaded = (_load(p) for p in sorted(SAMPLES.glob("*.py")))
    return tuple(s for s in loaded if not any("torch_xla" in imp for imp in s.imports))


def _rename(text: str, names: frozenset[str], suffix: str) -> str:
    """Rename the top-level ``names`` in ``text`` (name tokens only: never inside strings
    or comments, never an attribute such as ``self.main``)."""
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int]] = []
    prev: tokenize.TokenInfo | None = None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if (
            tok.type == tokenize.NAME
            and tok.string in names
            and not (prev is not None and prev.type == tokenize.OP and prev.string == ".")
        ):
            edits.append((tok.start[0] - 1, tok.start[1], tok.end[1]))
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            prev = tok
    for row, start, end in reversed(edits):
        line = lines[row]
        lines[row] = line[:start] + line[start:end] + suffix + line[end:]
    return "".join(lines)


def make_script(lines: int, seed: int = 0) -> str:
    """A parseable training script of exactly ``lines`` lines built from the samples.

    Raises ValueError when ``lines`` is too small to hold the import block and a main guard.
    """
    samples = _samples()
    rng = random.Random(seed)
    header: list[str] = ['"""Generated by bench/corpus.py from samples/ (do not edit)."""', ""]
    seen: set[str] = set()
    for sample in samples:
        for imp in sample.imports:
            # The same import with a different trailing comment is the same import.
            key = ast.dump(ast.parse(imp))
            if key not in seen:
                seen.add(key)
                header.append(imp)
    head = "\n".join(header) + "\n"
    head_lines = head.count("\n")
    guard_lines = 4  # two blank lines, the `if`, the call
    budget = lines - head_lines - guard_lines
    if budget < 0:
        raise ValueError(f"a script needs at least {head_lines + guard_lines} lines")
    body: list[str] = []
    mains: list[str] = []
    copy = 0
    while True:
        order = list(samples)
        rng.shuffle(order)
        fitted = False
        for sample in order:
            wholes = [sample.whole] if sample.whole.lines <= budget else []
            candidates = wholes or [p for p in sample.parts if p.lines <= budget]
            if not candidates:
                continue
            # The biggest part that fits keeps the padding at the end small.
            chosen = candidates[0]
            body.append(_rename(chosen.text, chosen.names, f"_{copy}"))
            if "main" in chosen.names:
                mains.append(f"main_{copy}")
            budget -= chosen.lines
            copy += 1
            fitted = True
        if not fitted:
            break
    # What no part fits in: comment lines, which every tool has to read past anyway.
    body.append("".join(f"# padding {i}\n" for i in range(budget)))
    call = mains[0] + "()" if mains else "pass"
    text = head + "".join(body) + f'\n\nif __name__ == "__main__":\n    {call}\n'
    assert text.count("\n") == lines, (text.count("\n"), lines)
    return text


def write_corpus(
    out: Path,
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    seeds: tuple[int, ...] = (0,),
    include_samples: bool = True,
) -> list[Path]:
    """Write the samples (unless told not to) and one generated script per size and seed
    into ``out``; returns the files written, samples first."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if include_samples:
        for sample in sorted(SAMPLES.glob("*.py")):
            dest = out / sample.name
            shutil.copyfile(sample, dest)
            written.append(dest)
    for size in sizes:
        for seed in seeds:
            dest = out / f"generated_{size}_s{seed}.py"
            dest.write_text(make_script(size, seed), encoding="utf-8")
            written.append(dest)
    return written


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x.replace("_", "")) for x in text.split(",") if x.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the scripts into")
    parser.add_argument("--sizes", type=_ints, default=DEFAULT_SIZES, help="e.g. 200,2000,10000")
    parser.add_argument("--seeds", type=_ints, default=(0,), help="e.g. 0,1,2")
    parser.add_argument("--no-samples", action="store_true", help="only generated scripts")
    args = parser.parse_args(argv)
    for path in write_corpus(args.out, args.sizes, args.seeds, not args.no_samples):
        print(f"{path}  {path.read_text(encoding='utf-8').count(chr(10))} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
