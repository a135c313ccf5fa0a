"""A process that leaves the run's process group (``os.setsid()`` in a fork, as a daemon
does) still dies with the run: killed owner (watchdog), owner's signal handler, normal end."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from .conftest import PYTHON
from .test_lifeline import _alive, _owner, _wait_for

# Writes "SCRIPT ESCAPEE" once the escapee (a grandchild in a session of its own, its parent
# gone) exists; the script then sleeps, or exits at once with "exit" as second argument.
ESCAPES = """\
import os, sys, time
out = sys.argv[1]
read_end, write_end = os.pipe()
if os.fork() == 0:
    os.setsid()
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    os.write(write_end, str(pid).encode())
    os._exit(0)
escapee = int(os.read(read_end, 32))
with open(out + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()} {escapee}\\n")
os.rename(out + ".tmp", out)
if sys.argv[2:] != ["exit"]:
    time.sleep(600)
"""


def _escapee_started(pids_file: Path, owner: subprocess.Popen) -> tuple[int, int]:
    assert _wait_for(lambda: pids_file.exists() or owner.poll() is not None, 60.0)
    script, escapee = (int(p) for p in pids_file.read_text().split())
    assert os.getpgid(escapee) != script, "the escapee is still in the run's group"
    return script, escapee


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGQUIT])
def test_a_process_that_left_the_group_dies_with_a_killed_owner(tmp_path: Path, sig: int):
    script = tmp_path / "escapes.py"
    script.write_text(ESCAPES)
    pids_file = tmp_path / "pids"
    owner = _owner(
        [PYTHON, "-m", "xla_lens", "run", str(script), "--", str(pids_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    escapee = None
    try:
        script_pid, escapee = _escapee_started(pids_file, owner)
        os.kill(owner.pid, sig)
        owner.wait(20)
        assert _wait_for(lambda: not _alive(script_pid), 10.0)
        assert _wait_for(lambda: not _alive(escapee), 10.0), "the setsid() escapee outlived"
    finally:
        owner.kill()
        owner.wait()
        if escapee is not None and _alive(escapee):
            os.kill(escapee, signal.SIGKILL)


def test_a_process_that_left_the_group_ends_with_a_normal_run(tmp_path: Path):
    script = tmp_path / "escapes.py"
    script.write_text(ESCAPES)
    pids_file = tmp_path / "pids"
    owner = _owner(
        [PYTHON, "-m", "xla_lens", "run", str(script), "--", str(pids_file), "exit"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    escapee = None
    try:
        _, escapee = _escapee_started(pids_file, owner)
        owner.wait(60)
        assert _wait_for(lambda: not _alive(escapee), 10.0), "the setsid() escapee outlived"
    finally:
        owner.kill()
        owner.wait()
        if escapee is not None and _alive(escapee):
            os.kill(escapee, signal.SIGKILL)
