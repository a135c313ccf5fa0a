"""Shared helpers for rule tests: analyse and fix source snippets with the real engine."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from xla_lens.engine import analyze, fix_source
from xla_lens.engine.fixing import apply_fix
from xla_lens.rules.base import Finding


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def findings(text: str, code: str | None = None, target: str = "modern") -> list[Finding]:
    result = analyze(src(text), target=target)
    assert result.ok, result.syntax_error
    assert not result.rule_errors, result.rule_errors
    return [f for f in result.findings if code is None or f.code == code]


def fixed(text: str, code: str | None = None, target: str = "modern", unsafe: bool = False) -> str:
    """Fix-all restricted to ``code`` (``unsafe``: also the fixes marked for review);
    asserts the result parses and is idempotent."""
    accept = (lambda f: f.code == code) if code else None
    # One rule's fixes alone are asked for what that rule writes, not for Convert's result.
    whole = code is None
    out = fix_source(src(text), target=target, accept=accept, unsafe=unsafe, consistent=whole)
    assert out.error is None, out.error
    ast.parse(out.source)
    again = fix_source(out.source, target=target, accept=accept, unsafe=unsafe, consistent=whole)
    assert again.source == out.source, "fix is not idempotent"
    return out.source


def fix_one(text: str, finding: Finding) -> str:
    out = apply_fix(src(text), finding)
    ast.parse(out)
    return out


def run_counting_executions(script: Path) -> dict[str, str]:
    """Run ``script`` under torch_xla on PJRT CPU with the number of graph executions printed
    at its end; its printed ``name value`` lines (``executions`` among them)."""
    script.write_text(
        script.read_text() + "import torch_xla.core.xla_model as _xm\n"
        "import torch_xla.debug.metrics as _met\n"
        "_xm.wait_device_ops()\n"
        'print("executions", _met.counter_value("ExecuteComputation"))\n'
    )
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return dict(line.split() for line in run.stdout.splitlines() if line.count(" ") == 1)
