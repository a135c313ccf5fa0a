"""The child process: its own session/process group, streamed output, group-wide kill."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

MAX_LINE = 8192  # longer lines are cut: a script printing a huge line must not eat memory
_CHUNK = 1 << 16


def become_subreaper() -> bool:
    """Makes this process adopt the script's orphans (Linux PR_SET_CHILD_SUBREAPER).

    Without it an orphaned fork is reparented to PID 1, and a container's PID 1 often never
    reaps: the killed fork would stay a zombie and its process group would still exist."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # 36 = PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_zombies(pgid: int) -> None:
    """Collects the exit status of the group's adopted orphans (never the leader: asyncio
    owns it)."""
    for pid in group_members(pgid, zombies=True):
        if pid != pgid:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


async def spawn(
    argv: list[str], env: dict[str, str], cwd: str, pass_fds: tuple[int, ...] = ()
) -> asyncio.subprocess.Process:
    become_subreaper()
    # A new session makes the child the leader of its own process group, so cancel can kill
    # everything it started (forks, launcher replicas, data-loader workers) and nothing else.
    return await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        pass_fds=pass_fds,
    )


async def pump_lines(stream: asyncio.StreamReader, on_line: Callable[[str, bool], None]) -> None:
    """Calls ``on_line(text, truncated)`` per line; reads fixed chunks, never ``readline``,
    which raises on lines over the reader's limit."""
    buf = b""
    dropping = False
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            break
        buf += chunk
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            line, buf = buf[:nl], buf[nl + 1 :]
            if dropping:
                dropping = False
                continue
            on_line(line[:MAX_LINE].decode(errors="replace").rstrip("\r"), len(line) > MAX_LINE)
        if len(buf) > MAX_LINE and not dropping:
            on_line(buf[:MAX_LINE].decode(errors="replace"), True)
            buf, dropping = b"", True
        elif dropping:
            buf = b""
    if buf and not dropping:
        on_line(buf[:MAX_LINE].decode(errors="replace"), len(buf) > MAX_LINE)


def group_members(pgid: int, zombies: bool = False) -> list[int]:
    """Processes in process group ``pgid`` (live ones unless ``zombies``), from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces or parentheses: fields start after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and (zombies or fields[0] != "Z") and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


async def kill_group(proc: asyncio.subprocess.Process, pgid: int, grace_s: float = 3.0) -> None:
    """SIGTERM the whole group, SIGKILL it after ``grace_s``, reap the leader."""
    _signal_group(pgid, signal.SIGTERM)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while loop.time() < deadline:
        if proc.returncode is not None and not group_members(pgid):
            break
        await asyncio.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)
    await wait_group_gone(pgid, 5.0)
    while proc.returncode is None:  # not proc.wait(): it also waits for the pipes
        await asyncio.sleep(0.02)


def kill_group_sync(pgid: int, grace_s: float) -> None:
    """``kill_group`` for a signal handler, where the event loop cannot run: blocks at most
    ``grace_s`` + 2 s."""
    if not group_members(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    if not _wait_gone_sync(pgid, grace_s):
        _signal_group(pgid, signal.SIGKILL)
        _wait_gone_sync(pgid, 2.0)


def _wait_gone_sync(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while group_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def wait_group_gone(pgid: int, timeout: float) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while group_members(pgid):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.05)
    reap_zombies(pgid)
    return True


async def reap_leftovers(pgid: int, grace_s: float = 1.0) -> int:
    """After the leader exited: kill what it left running in its group; returns how many."""
    left = group_members(pgid)
    if not left:
        return 0
    _signal_group(pgid, signal.SIGTERM)
    if not await wait_group_gone(pgid, grace_s):
        _signal_group(pgid, signal.SIGKILL)
        await wait_group_gone(pgid, 5.0)
    return len(left)


class FileTail:
    """Reads complete lines appended to a file, remembering the byte offset of each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._fh = None

    def read_lines(self, upto: int | None = None) -> list[tuple[int, str]]:
        if self._fh is None:
            try:
                self._fh = open(self.path, "rb")  # noqa: SIM115 - held open across polls
            except FileNotFoundError:
                return []
        self._fh.seek(self.offset)
        data = self._fh.read() if upto is None else self._fh.read(max(0, upto - self.offset))
        out = []
        pos = 0
        while True:
            nl = data.find(b"\n", pos)
            if nl < 0:
                break
            out.append((self.offset + pos, data[pos : nl + 1].decode(errors="replace")))
            pos = nl + 1
        self.offset += pos
        return out

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
