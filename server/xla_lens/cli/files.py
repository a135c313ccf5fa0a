"""Finding, reading and atomically writing script files, keeping bytes we do not own
(BOM, line endings) exactly as they were."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = {
    ".git",
    ".hg",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    ".tox",
    ".cache",
    "build",
    "dist",
}
MAX_BYTES = 20 * 1024 * 1024


class FileProblem(Exception):
    """A file cannot be analysed; the message is meant for the user."""


@dataclass
class SourceFile:
    path: Path
    text: str


def discover(paths: Iterable[str]) -> Iterator[Path]:
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for name in sorted(files):
                    if name.endswith(".py"):
                        path = Path(root) / name
                        # A FIFO, socket or device named *.py is no script, and reading a
                        # FIFO blocks forever. Broken links still come out, to be reported.
                        if path.exists() and not path.is_file():
                            continue
                        yield path
        else:
            yield p


def read_source(path: Path) -> SourceFile:
    try:
        if not path.exists():
            if path.is_symlink():
                raise FileProblem(f"{path}: broken symbolic link (or a link loop)")
            raise FileProblem(f"{path}: no such file")
        if path.is_dir():
            raise FileProblem(f"{path}: is a directory")
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise FileProblem(f"{path}: {size // (1024 * 1024)} MB is too large to analyse")
        with path.open("rb") as fh:
            # Bounded: st_size is 0 for /dev/zero or a pipe, which would never end.
            data = fh.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise FileProblem(f"{path}: more than {MAX_BYTES // (1024 * 1024)} MB, too large")
    except OSError as exc:
        raise FileProblem(f"{path}: cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise FileProblem(f"{path}: looks like a binary file, not Python source")
    try:
        # Decoding bytes keeps "\r\n" as is; a BOM stays in the text and the engine handles it.
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(
            f"{path}: not valid UTF-8 (byte {exc.start}): xla-lens reads Python source as UTF-8"
        ) from None
    return SourceFile(path, text)


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so a crash leaves either the old or the new file."""
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".xla-lens", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
