"""Ends a run whose owner died: kills the run's process group and removes its run folder.

``lifeline.Lifeline`` starts this file with ``python -I -S`` (stdlib only, so it starts in
milliseconds) in its own session, so the SIGHUP of a dropped terminal does not reach it, with
the owner's control pipe as stdin. The owner writes ``dir PATH`` and ``group PGID`` as they
become known (and ``token TOKEN``, the mark in the environment of every process of the run,
so those that left the group are found too) and ``done`` once the run ended and was cleaned up. End of input without ``done``
means the owner died, however it died (SIGKILL included): the kernel closes its end of the pipe.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time

RUN_DIR_PREFIX = "xla-lens-run-"


def live_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def kill_group(pgid: int, timeout_s: float = 5.0) -> None:
    # The owner is gone and nobody reads the run's results: no grace period.
    deadline = time.monotonic() + timeout_s
    while live_members(pgid) and time.monotonic() < deadline:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)


# A process that leaves the run's process group (os.setsid(), a daemonising fork) is out of
# reach of a group kill and of the kernel-armed lifeline. It keeps the environment it was
# started with, though: every process of a run carries this run's random token in it.
TOKEN_ENV = "XLA_LENS_RUN_TOKEN"


def marked(token: str) -> list[int]:
    """Live processes (of this user: others' environments are unreadable) whose starting
    environment holds ``TOKEN_ENV=token``."""
    needle = f"{TOKEN_ENV}={token}".encode()
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):  # a zombie's reads empty
            found.append(int(entry))
    return found


def kill_marked(token: str, timeout_s: float = 5.0) -> None:
    """SIGKILL every process of the run wherever it went, until none is left (one may fork
    while it is being killed)."""
    if not token.isalnum():
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = marked(token)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)


def is_run_dir(path: str) -> bool:
    """Only a folder the runner made is ever removed, whatever the pipe says."""
    parent = os.path.realpath(tempfile.gettempdir())
    return (
        os.path.basename(path).startswith(RUN_DIR_PREFIX)
        and os.path.dirname(os.path.realpath(path)) == parent
    )


def main() -> int:
    for sig in (signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    run_dir = None
    pgid = None
    token = None
    for raw in sys.stdin.buffer:
        command, _, arg = raw.decode(errors="replace").strip().partition(" ")
        if command == "done":
            return 0
        if command == "dir" and is_run_dir(arg):
            run_dir = arg
        elif command == "group" and arg.isdigit() and int(arg) > 1:
            pgid = int(arg)
        elif command == "token" and arg.isalnum():
            token = arg
    if pgid is not None:
        kill_group(pgid)
    if token is not None:
        kill_marked(token)
    if run_dir is not None:
        shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
