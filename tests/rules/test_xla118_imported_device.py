"""XLA118 for a device the script imports from a module of the workspace (held-out 58's
AWADA: ``from awada.config import DEFAULT_DEVICE``, a CUDA picker in config.py, then
``torch.device(args.device or DEFAULT_DEVICE)``): named at the first read, no fix here."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.rules import xla118_workspace_helper as rule
from xla_lens.semantic import workspace, workspace_calls, workspace_classes

from tests.helpers import src

CONFIG = """
import torch

DEFAULT_DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DEFAULT_LR = 2e-4
"""

SCRIPT = """
import argparse
import torch
from pkg.config import DEFAULT_DEVICE, DEFAULT_LR

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    lr = DEFAULT_LR
    device = torch.device(args.device if args.device is not None else DEFAULT_DEVICE)
    return device, lr
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    rule.clear_cache()
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_classes.clear_cache()
    yield


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


def _xla118(script: Path):
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [f for f in result.findings if f.code == "XLA118"]


def test_an_imported_cuda_picker_is_named_where_the_script_reads_it(tmp_path: Path):
    _write(tmp_path / "pkg" / "__init__.py", "")
    _write(tmp_path / "pkg" / "config.py", CONFIG)
    script = _write(tmp_path / "train.py", SCRIPT)
    (f,) = _xla118(script)
    assert f.span.start.line == 9 and f.fix is None
    assert "`DEFAULT_DEVICE` comes from pkg/config.py, where line 3 sets it" in f.message
    assert "pkg/config.py itself" in f.manual


def test_an_xla_aware_constant_or_an_unread_import_is_quiet(tmp_path: Path):
    _write(tmp_path / "pkg" / "__init__.py", "")
    _write(
        tmp_path / "pkg" / "config.py",
        CONFIG.replace(
            '"cuda" if torch.cuda.is_available() else "cpu"', "torch_xla.device()"
        ).replace("import torch\n", "import torch\nimport torch_xla\n"),
    )
    script = _write(tmp_path / "train.py", SCRIPT)
    assert _xla118(script) == []
    _write(tmp_path / "pkg" / "config.py", CONFIG)
    unread = _write(tmp_path / "other.py", SCRIPT.replace("else DEFAULT_DEVICE", "else 'cpu'"))
    workspace_calls.clear_cache()
    rule.clear_cache()
    assert _xla118(unread) == []


def test_a_picker_read_as_an_attribute_of_an_imported_module_is_named(tmp_path: Path):
    # held-out 67's LightGCN: ``import world`` then ``world.device``, where world.py says
    # ``device = torch.device('cuda' if GPU else "cpu")``.
    _write(tmp_path / "world.py", CONFIG.replace("DEFAULT_DEVICE", "device"))
    script = _write(
        tmp_path / "main.py",
        "import torch\nimport world\nmodel = torch.nn.Linear(2, 2).to(world.device)\n"
        "lr = world.DEFAULT_LR\n",
    )
    (f,) = _xla118(script)
    assert f.message.startswith("`world.device` comes from world.py, where line 3 sets it")
    assert f.span.start.line == 2


def test_other_attributes_of_the_module_are_not_named(tmp_path: Path):
    _write(tmp_path / "world.py", CONFIG.replace("DEFAULT_DEVICE", "device"))
    script = _write(tmp_path / "main.py", "import world\nlr = world.DEFAULT_LR\n")
    assert _xla118(script) == []
