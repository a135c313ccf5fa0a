"""``xla-lens run`` through run_main, as the CLI calls it."""

import json
from pathlib import Path

from xla_lens.runner.cli import run_main

from .conftest import DATA, marked_line


def test_json_stream_of_a_crash_and_its_exit_code(capsys):
    code = run_main([str(DATA / "crash.py"), "--json"])
    assert code == 1
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "device" and types[1] == "started" and types[-1] == "summary"
    assert "exit" in types and "exception" in types
    exc = next(e for e in events if e["type"] == "exception")
    assert exc["line"] == marked_line(DATA / "crash.py", "# CRASH")


def test_refused_script_exits_2_with_a_message_and_no_traceback(tmp_path: Path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    assert run_main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1" in err and "Traceback" not in err


def test_usage_errors_exit_2(capsys):
    assert run_main([str(DATA / "crash.py"), "--steps", "0"]) == 2
    try:
        run_main(["--no-such-flag"])
        raise AssertionError("argparse did not exit")
    except SystemExit as exc:
        assert exc.code == 2


def test_script_args_after_double_dash_reach_the_script(tmp_path: Path, capsys):
    script = tmp_path / "echo.py"
    script.write_text("import sys\nprint('ARGS', sys.argv[1:])\nsys.exit(3)\n")
    assert run_main([str(script), "--", "--lr", "0.1"]) == 3
    assert "ARGS ['--lr', '0.1']" in capsys.readouterr().out
