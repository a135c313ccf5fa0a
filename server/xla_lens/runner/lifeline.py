"""A run dies with whatever started it, and leaves no run folder behind.

The script runs in its own session (so cancel can kill its whole group), which also means no
terminal hang-up and no signal to its owner reaches it. Three layers tie it to its owner:

- the lifeline pipe: the owner holds the only write end, the script inherits the read end.
  The read end is armed with ``F_SETOWN`` (the script's process group), ``F_SETSIG`` SIGKILL and
  ``O_ASYNC``: when the owner dies, however it dies, the kernel closes the write end and sends
  SIGKILL to the whole group at once (no thread, no GIL, works for any program in the group).
  The owner arms it right after the start; the child's bootstrap arms it too, and kills its
  group if the owner was already gone by then.
- the watchdog (``watchdog.py``), a small process in its own session reading a control pipe:
  at end of input without ``done`` it kills what is left of the group and removes the folder.
- ``end_all_runs()``, for the owner's SIGTERM/SIGHUP handlers: a graceful, synchronous end.

A process that leaves the group (``os.setsid()``) escapes the first two group kills; every
process of the run carries a random token in its environment (``watchdog.TOKEN_ENV``), and the
watchdog, ``end_now`` and ``close`` also kill whatever still carries it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from . import process, watchdog

WATCHDOG = Path(__file__).with_name("watchdog.py")
LIFELINE_ENV = "XLA_LENS_LIFELINE"  # "FD:INODE" of the read end, for the child's bootstrap
_OPEN: set[Lifeline] = set()


def arm(fd: int, pgid: int) -> bool:
    """When the last writer of the pipe ``fd`` reads from goes away, SIGKILL group ``pgid``."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETOWN, -pgid)
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGKILL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
        return True
    except (OSError, AttributeError):  # AttributeError: no F_SETSIG outside Linux
        return False


class Lifeline:
    """One run's ties to its owner. ``open()`` before the run folder exists, ``close()`` after
    the group is gone and the folder removed."""

    def __init__(self) -> None:
        self.run_dir: Path | None = None
        self.pgid: int | None = None
        self.child_fd, self._write_fd = os.pipe()  # both non-inheritable until pass_fds
        self.token = secrets.token_hex(16)
        self._control: int | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    @classmethod
    def open(cls) -> Lifeline:
        line = cls()
        line._start_watchdog()
        line._tell(f"token {line.token}")
        _OPEN.add(line)
        return line

    def _start_watchdog(self) -> None:
        read_end, self._control = os.pipe()
        try:
            self._watchdog = subprocess.Popen(
                [sys.executable, "-I", "-S", str(WATCHDOG)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                cwd="/",
            )
        except OSError:  # no watchdog: the kernel-armed lifeline still ends the group
            os.close(self._control)
            self._control = None
        finally:
            os.close(read_end)

    def _tell(self, message: str) -> None:
        if self._control is not None:
            with contextlib.suppress(OSError):
                os.write(self._control, f"{message}\n".encode())

    def guard_dir(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._tell(f"dir {run_dir}")

    def child_env(self) -> dict[str, str]:
        return {
            LIFELINE_ENV: f"{self.child_fd}:{os.fstat(self.child_fd).st_ino}",
            watchdog.TOKEN_ENV: self.token,
        }

    def guard_group(self, pgid: int) -> None:
        """Called as soon as the child exists (its pid is its process group)."""
        self.pgid = pgid
        arm(self.child_fd, pgid)
        self._tell(f"group {pgid}")
        # The child holds the read end now; ours would only keep the pipe open after it.
        self._close_child_fd()

    def _close_child_fd(self) -> None:
        if self.child_fd >= 0:
            os.close(self.child_fd)
            self.child_fd = -1

    async def close(self) -> None:
        """The run ended normally: its group is gone, its folder removed."""
        _OPEN.discard(self)
        self._close_child_fd()
        # The group is gone; a process that left it (os.setsid()) must not outlive the run.
        await asyncio.to_thread(watchdog.kill_marked, self.token, 2.0)
        self._tell("done")
        for fd in (self._control, self._write_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._control, self._write_fd = None, -1
        if self._watchdog is not None:
            for _ in range(200):
                if self._watchdog.poll() is not None:
                    return
                await asyncio.sleep(0.01)
            self._watchdog.kill()
            self._watchdog.wait()

    def end_now(self, grace_s: float) -> None:
        """Synchronously: SIGTERM the group, SIGKILL it after ``grace_s``, remove the folder."""
        if self.pgid is not None:
            process.kill_group_sync(self.pgid, grace_s)
        watchdog.kill_marked(self.token, grace_s)
        if self.run_dir is not None:
            shutil.rmtree(self.run_dir, ignore_errors=True)


def end_all_runs(grace_s: float = 1.0) -> int:
    """For a signal handler of the owner: end every run this process started; returns how many.
    The watchdogs then see the owner go and find nothing left to do."""
    ended = 0
    for line in list(_OPEN):
        line.end_now(grace_s)
        ended += 1
    return ended


def install_owner_signal_handlers(signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)):
    """For a process that cannot hand the signal to its event loop (the language server):
    end the runs, then die of the same signal as if nothing had caught it."""

    def on_signal(signum: int, _frame) -> None:
        end_all_runs()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # not reached: the default action ends the process

    for sig in signals:
        signal.signal(sig, on_signal)
