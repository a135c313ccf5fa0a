"""What the language server loads before its first diagnostics (issue 12's cold start).

libcst (~170 ms to import) is only needed to build fix edits (codeAction/resolve, fixAll,
Convert, ``xla-lens fix``), and torch never: each is checked in a fresh interpreter, so
whatever another test imported cannot hide an eager import.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# The module each entry point imports before it serves, and what it then holds.
SERVE_PATHS = {
    "python -m xla_lens.lsp": "import xla_lens.lsp.server",
    "xla-lens serve": "import xla_lens.cli, xla_lens.lsp.server",
}
NEVER_AT_START = ("libcst", "torch", "torch_xla")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize("entry", SERVE_PATHS)
def test_serving_loads_neither_libcst_nor_torch(entry):
    loaded = _modules_after(SERVE_PATHS[entry])
    assert "lsprotocol.types" in loaded  # the probe saw the server's imports
    eager = sorted(m for m in loaded if m.split(".")[0] in NEVER_AT_START)
    assert not eager, f"{entry} imports {eager[:5]} before its first diagnostics"


def test_first_analysis_loads_no_libcst():
    """The analysis behind the first diagnostics (rules included) needs no libcst either."""
    code = (
        "from xla_lens.lsp.server import build_server\n"
        "from xla_lens.engine import analyze\n"
        "from xla_lens.lsp.diagnostics import diagnostics_for\n"
        "build_server()\n"
        "a = analyze('import torch\\nm = torch.nn.Linear(2, 2).cuda()\\n')\n"
        "assert a.findings, 'the probe script should have findings'\n"
    )
    loaded = _modules_after(code)
    assert "libcst" not in loaded


def test_a_fix_still_loads_libcst_when_asked():
    code = (
        "from xla_lens.engine import fix_source\n"
        "out = fix_source('import torch\\nm = torch.nn.Linear(2, 2).cuda()\\n')\n"
        "assert out.changed, out\n"
    )
    assert "libcst" in _modules_after(code)


def test_the_collector_is_back_on_once_the_server_is_tuned():
    """The entry points import with the collector off; tuning turns it back on."""
    import gc

    from xla_lens.lsp import memory

    before = gc.get_threshold()
    gc.disable()
    try:
        memory.tune_collector()
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*before)
