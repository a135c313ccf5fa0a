"""Process lifecycle with real subprocesses (no torch_xla work in these scripts)."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

from xla_lens.runner import RunOptions, start
from xla_lens.runner.events import Event
from xla_lens.runner.process import group_members

from .conftest import DATA, PYTHON, marked_line, of_type, run_collect


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_cancel_kills_the_whole_group_and_reports_cancelled():
    events: list[Event] = []
    pids: list[int] = []

    async def scenario():
        def on_event(e: Event) -> None:
            events.append(e)
            if e.type == "output":  # the two processes' prints may share one line
                for found in re.findall(r"parent (\d+) child (\d+)", e.text):
                    pids.extend(int(g) for g in found)

        handle = start(RunOptions(DATA / "forever.py", interpreter=PYTHON, grace_s=1.0), on_event)
        for _ in range(300):  # the fork prints twice; both pids are what we must see die
            if len(pids) >= 4:
                break
            await asyncio.sleep(0.05)
        assert len(pids) >= 4, events
        assert all(_alive(p) for p in pids)
        handle.cancel()
        return handle.pid, await handle.wait()

    pgid, summary = asyncio.run(scenario())
    assert summary.status == "cancelled"
    assert of_type(events, "exit")[0].status == "cancelled"
    assert group_members(pgid) == []
    assert not any(_alive(p) for p in set(pids))
    try:
        os.killpg(pgid, 0)
        raise AssertionError("process group still exists")
    except ProcessLookupError:
        pass


def test_timeout_kills_and_is_reported():
    summary, _ = run_collect(
        RunOptions(DATA / "forever.py", interpreter=PYTHON, timeout=2, grace_s=0.5)
    )
    assert summary.status == "timeout"


def test_crash_maps_the_traceback_to_the_raising_line():
    script = DATA / "crash.py"
    summary, events = run_collect(RunOptions(script, interpreter=PYTHON))
    assert summary.status == "failed" and summary.returncode == 1
    exc = of_type(events, "exception")[0]
    assert exc.exc_type == "ZeroDivisionError"
    assert (exc.file, exc.line) == (str(script), marked_line(script, "# CRASH"))
    crash = [p for p in summary.problems if p.kind == "crash"]
    assert crash and crash[0].line == marked_line(script, "# CRASH")
    # the user still sees Python's own traceback on stderr
    assert any("ZeroDivisionError" in e.text for e in of_type(events, "output"))


def test_syntax_error_is_refused_before_start(tmp_path: Path):
    script = tmp_path / "bad.py"
    script.write_text("x = 1\ndef broken(:\n    pass\n")
    summary, events = run_collect(RunOptions(script, interpreter=PYTHON))
    assert summary.status == "refused"
    refused = of_type(events, "refused")[0]
    assert refused.line == 2 and f"{script}:2" in refused.message
    assert not of_type(events, "started")


def test_killed_by_signal_reports_the_signal_name():
    summary, events = run_collect(RunOptions(DATA / "killed.py", interpreter=PYTHON))
    assert summary.status == "signal" and summary.signal == "SIGKILL"
    assert summary.returncode == -9


def test_megabytes_of_output_stream_and_long_lines_are_cut():
    summary, events = run_collect(RunOptions(DATA / "noisy.py", interpreter=PYTHON))
    assert summary.status == "ok"
    out = of_type(events, "output")
    stdout = [e for e in out if e.stream == "stdout"]
    assert len(stdout) == 40000 and stdout[-1].text.startswith("line 039999 ")
    long = [e for e in out if e.stream == "stderr"]
    assert len(long) == 1 and long[0].truncated and len(long[0].text) == 8192


def test_forked_child_left_running_is_killed_after_exit(tmp_path: Path):
    script = tmp_path / "leaves_child.py"
    script.write_text(
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    time.sleep(600)\n"
        "print('parent leaves', flush=True)\n"
    )
    events: list[Event] = []

    async def scenario():
        handle = start(RunOptions(script, interpreter=PYTHON), events.append)
        return handle, await handle.wait()

    handle, summary = asyncio.run(scenario())
    assert summary.status == "ok" and summary.leftover_killed == 1
    assert group_members(handle.pid) == []
