"""Ends a run whose owner died: kills the run's process group and removes its run folder.

``lifeline.Lifeline`` starts this file with ``python -I -S`` (stdlib only, so it starts in
milliseconds) in its own session, so the SIGHUP of a dropped terminal does not reach it, with
the owner's control pipe as stdin. The owner writes ``dir PATH`` and ``group PGID`` as they
become known and ``done`` once the run ended and was cleaned up. End of input without ``done``
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
    for raw in sys.stdin.buffer:
        command, _, arg = raw.decode(errors="replace").strip().partition(" ")
        if command == "done":
            return 0
        if command == "dir" and is_run_dir(arg):
            run_dir = arg
        elif command == "group" and arg.isdigit() and int(arg) > 1:
            pgid = int(arg)
    if pgid is not None:
        kill_group(pgid)
    if run_dir is not None:
        shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
