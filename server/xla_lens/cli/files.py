"""Finding and reading script files: regular files only (a FIFO would block forever), bounded
in size, with the bytes and stamp kept so ``fix`` can tell if another program wrote since."""

from __future__ import annotations

import os
import stat
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
    """A file cannot be analysed or written; the message is meant for the user."""


@dataclass(frozen=True)
class Stamp:
    """Identity and state of a file when it was read, to notice another program's write."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass
class SourceFile:
    path: Path
    text: str
    # The bytes and stamp as read: `fix` writes only if the file still holds exactly these.
    data: bytes = b""
    stamp: Stamp | None = None


_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def link_target(path: Path) -> str:
    """Where a link leads, for a message; a loop or an unreadable link says so."""
    try:
        return str(path.resolve(strict=True))
    except (OSError, RuntimeError):
        return f"{path} (a link that leads nowhere)"


def _links_out_of(path: Path, folder: Path) -> bool:
    """A link whose target is outside ``folder``; a broken link or a loop is not (it is
    reported as unreadable where it is read)."""
    if not path.is_symlink():
        return False
    try:
        path.resolve(strict=True).relative_to(folder)
    except ValueError:
        return True
    except (OSError, RuntimeError):
        return False
    return False


def discover(paths: Iterable[str], outside_links: list[Path] | None = None) -> Iterator[Path]:
    """The .py files of ``paths`` (folders walked). With ``outside_links``, a file found in a
    folder that is a link to a file outside that folder is not yielded but listed there: a
    ``fix`` of a folder must not write outside it (naming the file itself still fixes it)."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            top = p.resolve()
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for name in sorted(files):
                    if name.endswith(".py"):
                        path = Path(root) / name
                        # A FIFO, socket or device named *.py is no script, and reading a
                        # FIFO blocks forever. Broken links still come out, to be reported.
                        if path.exists() and not path.is_file():
                            continue
                        if outside_links is not None and _links_out_of(path, top):
                            outside_links.append(path)
                            continue
                        yield path
        else:
            yield p


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A read-only descriptor of ``path`` (links followed) if it is a regular file.
    O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode):
        return fd, st
    os.close(fd)
    if stat.S_ISDIR(st.st_mode):
        raise FileProblem(f"{path}: is a directory")
    kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
    raise FileProblem(f"{path}: {kind}, not a regular file; not read")


def read_bounded(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_source(path: Path) -> SourceFile:
    try:
        if not path.exists():
            if path.is_symlink():
                raise FileProblem(f"{path}: broken symbolic link (or a link loop)")
            raise FileProblem(f"{path}: no such file")
        fd, st = _open_regular(path)
        try:
            if st.st_size > MAX_BYTES:
                raise FileProblem(
                    f"{path}: {st.st_size // (1024 * 1024)} MB is too large to analyse"
                )
            # Bounded even for a regular file: it may grow while it is read.
            data = read_bounded(fd, MAX_BYTES + 1)
        finally:
            os.close(fd)
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
    return SourceFile(path, text, data, Stamp.of(st))
