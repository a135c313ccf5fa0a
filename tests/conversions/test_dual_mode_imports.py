"""Dual-mode scripts (torch_xla imported under an availability test), proven by running: the
converted script trains on the XLA device with the original's losses, and run without a PJRT
device (its other mode) it still trains on the CPU with the same losses — no module-level
torch_xla import, the sync under the script's own test."""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

from .harness import FIXTURES, _env, assert_proven, prove, run_script


def test_a_dual_mode_script_keeps_both_modes():
    result = prove(FIXTURES / "dual_mode_guarded_import.py")
    assert_proven(result)
    out = result.converted_source
    tree = ast.parse(out)
    assert not any(
        isinstance(s, ast.Import | ast.ImportFrom) and "torch_xla" in ast.unparse(s)
        for s in tree.body
    ), out
    assert "if is_torch_xla_available():\n            torch_xla.sync()" in out
    # The other mode: no PJRT device, so the script's test is False; it must run as before.
    with tempfile.TemporaryDirectory(prefix="xla-lens-proof-") as tmp:
        script = Path(tmp) / "converted_other_mode.py"
        script.write_text(out)
        other = run_script(script, env=_env(None))
    assert other.returncode == 0, other.stderr
    assert other.param_device == "cpu"
    assert other.losses == result.original.losses
