"""A run dies with whatever started it and leaves no run folder: the owner (``xla-lens run`` or
the language server) is killed for real while its script and the script's fork are running.
The scripts are cheap (no torch import) so each case takes about a second."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from xla_lens.runner import RunOptions
from xla_lens.runner import lifeline as lifeline_mod
from xla_lens.runner.session import BOOTSTRAP
from xla_lens.runner.watchdog import is_run_dir

from .conftest import PYTHON, run_collect

# Writes "PARENT CHILD\nRUN_DIR" once both processes exist, then both sleep for ten minutes.
FORKS = """\
import os, sys, time
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "pids")
run_dir = os.path.dirname(os.environ.get("XLA_LENS_CHANNEL", ""))
child = os.fork()
if child == 0:
    time.sleep(600)
    os._exit(0)
with open(out + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()} {child}\\n{run_dir}\\n")
os.rename(out + ".tmp", out)
print("ready", flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _started(pids_file: Path, owner: subprocess.Popen) -> tuple[list[int], Path]:
    assert _wait_for(pids_file.exists), f"the script never started (owner rc {owner.poll()})"
    first, run_dir = pids_file.read_text().splitlines()
    pids = [int(p) for p in first.split()]
    assert all(_alive(p) for p in pids) and Path(run_dir).is_dir()
    assert Path(run_dir).name.startswith("xla-lens-run-")
    return pids, Path(run_dir)


def _assert_run_ended(pids: list[int], run_dir: Path) -> None:
    assert _wait_for(lambda: not any(_alive(p) for p in pids), 5.0), [p for p in pids if _alive(p)]
    assert _wait_for(lambda: not run_dir.exists(), 5.0), f"{run_dir} left behind"


def _owner(argv: list[str], **kwargs) -> subprocess.Popen:
    # Its own session, so the signals sent to it never reach pytest.
    return subprocess.Popen(argv, start_new_session=True, **kwargs)


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGKILL])
def test_xla_lens_run_killed_takes_the_script_and_its_fork_with_it(tmp_path: Path, sig: int):
    script = tmp_path / "forks.py"
    script.write_text(FORKS)
    pids_file = tmp_path / "pids"
    owner = _owner(
        [PYTHON, "-m", "xla_lens", "run", str(script), "--", str(pids_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        pids, run_dir = _started(pids_file, owner)
        os.kill(owner.pid, sig)
        _assert_run_ended(pids, run_dir)
        rc = owner.wait(10)
        # SIGHUP is a cancel (exit 128+1); SIGKILL cannot be caught.
        assert rc == (129 if sig == signal.SIGHUP else -signal.SIGKILL)
    finally:
        owner.kill()
        owner.wait()


class _LspClient:
    """Just enough JSON-RPC to start a run; the server's output is drained and kept."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.received = bytearray()
        self._next_id = 0
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while chunk := self.proc.stdout.read1(65536):
            self.received += chunk

    def send(self, method: str, params: object, request: bool = True) -> None:
        msg: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self._next_id += 1
            msg["id"] = self._next_id
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_server_killed_takes_its_runs_with_it(tmp_path: Path, sig: int):
    script = tmp_path / "forks.py"
    script.write_text(FORKS)
    server = _owner(
        [PYTHON, "-m", "xla_lens", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    client = _LspClient(server)
    try:
        client.send("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {}})
        client.send("initialized", {}, request=False)
        client.send(
            "workspace/executeCommand",
            {"command": "xla-lens.run", "arguments": [{"uri": script.as_uri()}]},
        )
        pids, run_dir = _started(tmp_path / "pids", server)
        os.kill(server.pid, sig)
        _assert_run_ended(pids, run_dir)
        assert server.wait(10) == -sig  # the server still dies of the signal it got
    finally:
        server.kill()
        server.wait()


def test_bootstrap_kills_its_group_when_the_owner_died_before_it_started(tmp_path: Path):
    """The window between the fork and the owner arming the lifeline: the child sees end of
    file at start-up and ends its own group."""
    read_end, write_end = os.pipe()
    os.close(write_end)  # the owner is already gone
    env = dict(
        os.environ,
        PYTHONPATH=str(BOOTSTRAP),
        XLA_LENS_LIFELINE=f"{read_end}:{os.fstat(read_end).st_ino}",
    )
    env.pop("XLA_LENS_CHANNEL", None)
    marker = tmp_path / "ran"
    child = subprocess.Popen(
        [PYTHON, "-c", f"import time; open({str(marker)!r}, 'w'); time.sleep(60)"],
        env=env,
        pass_fds=(read_end,),
        start_new_session=True,
    )
    os.close(read_end)
    try:
        assert child.wait(20) == -signal.SIGKILL
        assert not marker.exists()  # killed before the script's first line
    finally:
        child.kill()
        child.wait()


def test_a_wrong_lifeline_fd_is_left_alone(tmp_path: Path):
    """A reused fd number (not our pipe) is never armed: the script runs normally."""
    env = dict(os.environ, PYTHONPATH=str(BOOTSTRAP), XLA_LENS_LIFELINE="0:1")
    done = subprocess.run(
        [PYTHON, "-c", "import os; print(os.environ.get('XLA_LENS_LIFELINE'))"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0 and done.stdout.strip() == "None"


def test_a_normal_run_leaves_no_watchdog_and_no_folder(tmp_path: Path):
    script = tmp_path / "quick.py"
    script.write_text(
        "import os\nprint(os.path.dirname(os.environ['XLA_LENS_CHANNEL']), flush=True)\n"
    )
    summary, events = run_collect(RunOptions(script, interpreter=PYTHON))
    assert summary.status == "ok"
    run_dir = next(e.text for e in events if e.type == "output")
    assert not Path(run_dir).exists()
    assert lifeline_mod._OPEN == set()
    watchdogs = []
    for entry in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[2])
        except (OSError, ValueError, IndexError):
            continue
        if str(lifeline_mod.WATCHDOG).encode() in cmd and ppid == os.getpid():
            watchdogs.append(entry)
    assert watchdogs == []


def test_the_watchdog_only_removes_run_folders(tmp_path: Path):
    import tempfile

    assert not is_run_dir(str(tmp_path))
    assert not is_run_dir("/home/xla-lens-run-x")
    assert is_run_dir(os.path.join(tempfile.gettempdir(), "xla-lens-run-abc"))
    precious = tmp_path / "precious"
    precious.mkdir()
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(lifeline_mod.WATCHDOG)],
        input=f"dir {precious}\ngroup 1\n".encode(),
        timeout=30,
    )
    assert done.returncode == 0 and precious.is_dir()
