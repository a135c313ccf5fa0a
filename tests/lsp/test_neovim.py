"""A real third-party LSP client: Neovim's built-in client, headless."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.engine.fixing import apply_fix

from tests.lsp.lsp_helpers import DATA

SCRIPT = Path(__file__).parent / "neovim" / "quickfix.lua"
NVIM = shutil.which("nvim")


@pytest.mark.neovim
@pytest.mark.skipif(
    NVIM is None,
    reason="nvim not installed (apt-get install neovim): Neovim LSP client test skipped",
)
def test_neovim_receives_diagnostics_and_applies_a_quick_fix(tmp_path: Path):
    sample = tmp_path / "train_cuda.py"
    shutil.copy(DATA / "train_cuda.py", sample)
    text = sample.read_text(encoding="utf-8")
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "XLA_LENS_PY": sys.executable,
        "XLA_LENS_FILE": str(sample),
        "XLA_LENS_OUT": str(out),
        "XLA_LENS_FIX_LINE": "6",
        "HOME": str(tmp_path),  # no user state or shada from the machine
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {SCRIPT}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), (
        f"nvim wrote no result (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    assert proc.returncode == 0 and "error" not in result, (result, proc.stderr)

    before = [d for d in result["before"] if d["code"] == "XLA101"]
    assert sorted(d["lnum"] for d in before) == [4, 5, 6]
    assert all(d["source"] == "xla-lens" for d in before)
    # Neovim turns our UTF-16 columns into byte columns: they must land on `"cuda"`.
    line6 = text.splitlines()[6]
    byte_col = len(line6[: line6.index('"cuda"')].encode("utf-8"))
    d6 = next(d for d in before if d["lnum"] == 6)
    assert (d6["col"], d6["end_col"]) == (byte_col, byte_col + len('"cuda"'))

    finding = next(
        f
        for f in analyze(text, str(sample), target="modern").findings
        if f.code == "XLA101" and f.span.start.line == 6
    )
    assert result["text"] == apply_fix(text, finding)
    assert sorted(d["lnum"] for d in result["after"] if d["code"] == "XLA101") == [4, 5]
