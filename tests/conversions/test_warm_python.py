"""The warm interpreter runs a script as `python script.py` would: same output, exit status,
argv, cwd, environment, `__main__`, shutdown order; and a proof gives the same losses warm as
cold."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from . import warm_python
from .harness import FIXTURES, _env, prove, run_script

PROBE = textwrap.dedent(
    """
    import atexit, os, sys, threading, time
    import torch

    def late():
        time.sleep(0.3)
        print("thread done", flush=True)

    class Record:
        pass

    threading.Thread(target=late).start()
    atexit.register(lambda: print("atexit ran"))
    print("argv", sys.argv[1:])
    print("cwd", os.getcwd() == os.path.dirname(os.path.abspath(__file__)))
    print("path0", sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
    print("steps", os.environ.get("XLA_LENS_STEPS"))
    print("main", __name__, Record.__module__, sys.modules["__main__"].__file__ == __file__)
    print("stdin", repr(sys.stdin.read()))
    print("to stderr", file=sys.stderr)
    if sys.argv[1:] == ["fail"]:
        raise ValueError("boom")
    if sys.argv[1:] == ["exit"]:
        sys.exit(3)
    if sys.argv[1:] == ["hang"]:
        time.sleep(600)
    """
)


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    return script


def _warm(script: Path, *args: str, timeout: float = 120, **extra: str):
    result = warm_python.run_warm(script, args, _env(2, **extra), script.parent, timeout)
    assert result is not None, "no warm interpreter could start"
    return result


def test_a_warm_run_is_a_script_run(probe: Path) -> None:
    rc, out, err, timed_out = _warm(probe, "a", "--b")
    assert (rc, timed_out) == (0, False), err
    lines = out.splitlines()
    assert lines[:7] == [
        "argv ['a', '--b']",
        "cwd True",
        "path0 True",
        "steps 2",
        "main __main__ __main__ True",
        "stdin ''",
        # Non-daemon threads finish before atexit handlers run, as at interpreter exit.
        "thread done",
    ]
    assert lines[7] == "atexit ran"
    assert "to stderr" in err


def test_exit_status_and_tracebacks_match_python(probe: Path) -> None:
    rc, _, err, _ = _warm(probe, "fail")
    assert rc == 1 and "ValueError: boom" in err and "Traceback" in err
    rc, _, _, _ = _warm(probe, "exit")
    assert rc == 3


def test_a_hung_run_is_killed_at_its_timeout(probe: Path) -> None:
    rc, _, _, timed_out = _warm(probe, "hang", timeout=3)
    assert timed_out and rc != 0
    # The server survives a killed run.
    assert _warm(probe)[0] == 0


def test_runs_do_not_share_state(tmp_path: Path) -> None:
    script = tmp_path / "mutate.py"
    script.write_text(
        "import torch\n"
        "print('before', getattr(torch, '_xla_lens_mark', None))\n"
        "torch._xla_lens_mark = 1\n"
    )
    assert _warm(script)[1] == "before None\n"
    assert _warm(script)[1] == "before None\n"


@pytest.mark.xla
def test_a_proof_gives_the_same_losses_warm_and_cold(monkeypatch) -> None:
    fixture = FIXTURES / "basic_picker.py"
    warm = prove(fixture, steps=3)
    monkeypatch.setenv("XLA_LENS_TEST_COLD", "1")
    assert not warm_python.enabled()
    cold = prove(fixture, steps=3)
    assert warm.converted.returncode == cold.converted.returncode == 0, cold.describe()
    assert warm.converted.losses == cold.converted.losses and warm.converted.losses
    assert warm.original.losses == cold.original.losses
    assert warm.converted.param_devices == cold.converted.param_devices
    assert warm.converted.param_device.startswith("xla")


def test_a_shimmed_run_starts_cold(tmp_path: Path) -> None:
    script = tmp_path / "pid.py"
    script.write_text("import os\nprint(os.getppid())\n")
    result = run_script(script, env=_env(None), cuda_shim=True, timeout=120)
    assert result.returncode == 0
    # Started by this process, not forked by a server.
    assert int(result.stdout) == os.getpid()


def test_one_server_per_preload_whatever_the_tests_environment(probe: Path, monkeypatch) -> None:
    for name in ("first", "second"):
        monkeypatch.setenv("PYTEST_CURRENT_TEST", name)
        assert _warm(probe)[0] == 0
    assert _warm(probe, OTHER_SETTING="1")[0] == 0
    preloads = [key[0] for key in warm_python._servers]
    assert len(preloads) == len(set(preloads)), preloads
