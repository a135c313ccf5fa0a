"""The bootstrap's explain window, without torch_xla: closing it keeps the window's graphs,
points the dump file at /dev/null and stops Python-frame capture."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

from xla_lens.runner.session import BOOTSTRAP


class FakeXLAC:
    def __init__(self) -> None:
        self.ir_debug = True

    def _set_ir_debug(self, on: bool) -> None:
        self.ir_debug = on


def load_hook():
    spec = importlib.util.spec_from_file_location(
        "hook_under_test", BOOTSTRAP / "_xla_lens_hook.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_closing_the_window_keeps_its_graphs_and_silences_the_dump(tmp_path: Path):
    hook = load_hook()
    base = tmp_path / "graphs.hlo"
    (tmp_path / "graphs.hlo.0").write_text("window graphs\n")
    (tmp_path / "graphs.hlo.notanordinal").write_text("left alone\n")
    channel = tmp_path / "channel.jsonl"
    hook._fd = os.open(channel, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    hook._XLAC = FakeXLAC()
    hook._graphs_file, hook._steps = str(base), 30
    try:
        hook._close_explain_window()
    finally:
        os.close(hook._fd)
    assert (tmp_path / "graphs.hlo.0.window").read_text() == "window graphs\n"
    assert os.readlink(tmp_path / "graphs.hlo.0") == os.devnull
    assert (tmp_path / "graphs.hlo.notanordinal").read_text() == "left alone\n"
    assert hook._XLAC.ir_debug is False and hook._graphs_file == ""
    (msg,) = [json.loads(line) for line in channel.read_text().splitlines()]
    assert msg["t"] == "explain_window" and msg["step"] == 30
