"""Writing a fixed script back without losing anybody's data.

The file is written only if it still holds exactly the bytes ``fix`` read (another program,
an editor's save, may have written meanwhile); through a symbolic link to its target (the
link stays); keeping its mode, owner and extended attributes. A file with one link is
replaced atomically (temporary file + rename), so a crash leaves the old or the new file.
Where a new file could not be the same file (hard links, another owner, attributes that
cannot be copied) it is rewritten in place, which keeps the inode and all of that. A
read-only file is never written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

from .files import MAX_BYTES, FileProblem, SourceFile, Stamp, read_bounded

_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


class _KeepInPlace(Exception):
    """The temporary file cannot carry the original's metadata; rewrite in place instead."""


def write_back(source: SourceFile, text: str) -> Path:
    """Write ``text`` over the file ``source`` was read from; the path actually written
    (the link's target for a symbolic link). Raises FileProblem, with nothing changed,
    when the file changed since it was read, is read-only, or cannot be written."""
    path = source.path
    target = Path(os.path.realpath(path))
    data = text.encode("utf-8")
    try:
        st = os.stat(target)
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem(f"{path}: no longer a regular file; left untouched")
        if not st.st_mode & _WRITE_BITS or not os.access(target, os.W_OK):
            # Mode bits, not just access(): root may write anything, yet 0444 says "don't".
            raise FileProblem(f"{path}: read-only, left untouched")
        _check_unchanged(source, target, st)
        if st.st_nlink > 1:
            _write_in_place(source, target, data)
        else:
            try:
                _replace_atomically(source, target, st, data)
            except _KeepInPlace:
                _write_in_place(source, target, data)
    except OSError as exc:
        raise FileProblem(f"{path}: cannot write: {exc.strerror or exc}; left untouched") from None
    return target


def _changed(path: Path) -> FileProblem:
    return FileProblem(
        f"{path}: changed on disk by another program since it was read; left untouched"
        " (run fix again)"
    )


def _check_unchanged(source: SourceFile, target: Path, st: os.stat_result) -> None:
    # The stamp catches a replaced file; the bytes catch a write within the same mtime tick.
    if source.stamp is not None and Stamp.of(st) != source.stamp:
        raise _changed(source.path)
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        current = read_bounded(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    if current != source.data:
        raise _changed(source.path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _replace_atomically(source: SourceFile, target: Path, st: os.stat_result, data: bytes) -> None:
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".xla-lens", dir=target.parent)
    except PermissionError:
        # A folder the user may not create files in, holding a file they may write (as an
        # editor does, write the file itself then).
        raise _KeepInPlace from None
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
            _copy_metadata(fd, target, st)
        finally:
            os.close(fd)
        # As late as possible: the window for another program's write is this one line.
        _check_unchanged(source, target, os.stat(target))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where supported
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _copy_metadata(fd: int, target: Path, st: os.stat_result) -> None:
    """Owner, then mode (chown clears set-id bits), then extended attributes."""
    if hasattr(os, "geteuid") and hasattr(os, "fchown"):
        if st.st_uid != os.geteuid() and os.geteuid() != 0:
            raise _KeepInPlace  # only root can give the new file someone else's owner
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:
            raise _KeepInPlace from None  # a group the user is not in
    if not hasattr(os, "fchmod"):
        raise _KeepInPlace  # no way to set the mode through the descriptor here
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(target)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, getattr(errno, "EOPNOTSUPP", errno.ENOTSUP)):
            return
        raise
    for name in names:
        try:
            os.setxattr(fd, name, os.getxattr(target, name))
        except OSError:
            raise _KeepInPlace from None


def _write_in_place(source: SourceFile, target: Path, data: bytes) -> None:
    """Overwrite the same inode: hard links, owner, mode and attributes all stay. Checked
    and written through one descriptor, with the space reserved first so a full disk fails
    before the first byte changes."""
    fd = os.open(target, os.O_RDWR | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if source.stamp is not None and Stamp.of(st) != source.stamp:
            raise _changed(source.path)
        if read_bounded(fd, MAX_BYTES + 1) != source.data:
            raise _changed(source.path)
        grown = False
        if len(data) > st.st_size and hasattr(os, "posix_fallocate"):
            try:
                os.posix_fallocate(fd, 0, len(data))
                grown = True
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS):
                    raise
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            _write_all(fd, data)
        except OSError:
            if grown:  # the reservation made the file longer: give the length back
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, st.st_size)
            raise
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)
