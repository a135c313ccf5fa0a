"""Reading a file the workspace names (pyproject.toml, a sibling module) without letting
the workspace stall or flood the reader.

``Path.is_file()`` is not enough: a regular file can block a reader forever (``/proc/kmsg``
behind a symbolic link, for root, as CI containers often run), and a FIFO or device can be
swapped in between the check and the open. Here the open is non-blocking, the type is
checked on the descriptor itself, and the read is bounded.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Texts that stand in for files on disk (``fix --diff`` over several files: the later passes
# read what the earlier ones would have written), by resolved path. Empty otherwise.
_overlay: dict[str, bytes] = {}


def set_overlay(texts: dict[Path, str]) -> None:
    """Let ``read_regular`` answer these texts for these files (an empty dict: the disk)."""
    _overlay.clear()
    _overlay.update({os.path.realpath(p): t.encode("utf-8") for p, t in texts.items()})


class UnreadableFile(OSError):
    """Not a regular file, larger than allowed, or it would block."""


def read_regular(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (links followed), at most ``limit`` of them.
    Raises OSError (``UnreadableFile`` for the cases above) instead of blocking."""
    if _overlay:
        stand_in = _overlay.get(os.path.realpath(path))
        if stand_in is not None:
            if len(stand_in) > limit:
                raise UnreadableFile(f"larger than {limit} bytes")
            return stand_in
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile("not a regular file")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            try:
                chunk = os.read(fd, min(left, 1 << 20))
            except BlockingIOError:
                raise UnreadableFile("reading it would block") from None
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise UnreadableFile(f"larger than {limit} bytes")
        return data
    finally:
        os.close(fd)
