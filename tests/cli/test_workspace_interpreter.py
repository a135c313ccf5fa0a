"""A workspace's ``[tool.xla-lens] interpreter`` is data, never a program to run.

Every attacking interpreter below writes a canary file when executed: a shell script named
in pyproject.toml, a relative ``.venv/bin/python`` that is a script, and a real venv whose
``site-packages/*.pth`` runs code even under ``python -I``. ``check``, ``check --format
sarif``, ``fix --diff`` and ``fix`` must leave no canary, and ``target = auto`` must still
come out right from the venv's ``torch_xla-*.dist-info/METADATA``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from xla_lens.cli import main
from xla_lens.engine import config
from xla_lens.engine.config import Settings, resolve_target, settings_for_path

from tests.fake_env import canary_script, fake_venv, write_executable

CUDA = "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n"
MODERN_TITLE = "Replace .cuda() with .to(torch_xla.device())"


@pytest.fixture(autouse=True)
def fresh_resolution() -> None:
    # The same relative interpreter string recurs across tests; a cached answer would hide
    # whether this test's workspace is looked at.
    for cached in (config.torch_xla_version, config._load_pyproject):
        getattr(cached, "cache_clear", lambda: None)()


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    return tmp_path / "canary"


def workspace_evil_sh(ws: Path, canary: Path) -> str:
    write_executable(ws / "evil.sh", canary_script(canary))
    return "./evil.sh"


def workspace_script_venv(ws: Path, canary: Path) -> str:
    write_executable(ws / ".venv" / "bin" / "python", canary_script(canary))
    return ".venv/bin/python"


def workspace_pth_venv(ws: Path, canary: Path) -> str:
    # A working interpreter: `python -I` still processes the venv's .pth files.
    exe = fake_venv(ws / ".venv", "1.13", python=Path(os.path.realpath(sys.executable)))
    site = next((ws / ".venv" / "lib").glob("python*/site-packages"))
    (site / "evil.pth").write_text(f"import os; open({str(canary)!r}, 'w').write('pth')\n")
    return str(exe.relative_to(ws))


ATTACKS = {
    "evil.sh": workspace_evil_sh,
    "script named .venv/bin/python": workspace_script_venv,
    "venv with a .pth": workspace_pth_venv,
}
ENTRY_POINTS = {
    "check": ["check", "train.py"],
    "check --format sarif": ["check", "--format", "sarif", "train.py"],
    "fix --diff": ["fix", "--diff", "train.py"],
    "fix": ["fix", "train.py"],
}


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_workspace_interpreter_is_never_executed(
    tmp_path: Path, canary: Path, monkeypatch: pytest.MonkeyPatch, attack: str, entry: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    interpreter = ATTACKS[attack](ws, canary)
    (ws / "pyproject.toml").write_text(f'[tool.xla-lens]\ninterpreter = "{interpreter}"\n')
    (ws / "train.py").write_text(CUDA)
    monkeypatch.chdir(ws)
    code = main(ENTRY_POINTS[entry])
    assert code in (0, 1)
    assert not canary.exists(), f"{entry} executed the workspace's {attack}"


def test_parent_folder_pyproject_interpreter_is_not_executed(
    tmp_path: Path, canary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_executable(tmp_path / "evil.sh", canary_script(canary))
    (tmp_path / "pyproject.toml").write_text('[tool.xla-lens]\ninterpreter = "./evil.sh"\n')
    sub = tmp_path / "project" / "src"
    sub.mkdir(parents=True)
    (sub / "train.py").write_text(CUDA)
    monkeypatch.chdir(tmp_path)
    assert main(["check", str(sub)]) == 1
    assert not canary.exists()


@pytest.mark.parametrize(("version", "target"), [("2.9.0", "modern"), ("1.13", "legacy")])
def test_auto_reads_the_workspace_venv_metadata(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    target: str,
) -> None:
    ws = tmp_path / "ws"
    fake_venv(ws / ".venv", version)  # no interpreter binary at all: nothing could run
    (ws / "pyproject.toml").write_text('[tool.xla-lens]\ninterpreter = ".venv/bin/python"\n')
    (ws / "train.py").write_text(CUDA)
    assert resolve_target(settings_for_path(ws / "train.py")) == target
    # Relative to the pyproject.toml, not to the current folder.
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--format", "json", str(ws / "train.py")]) == 1
    title = json.loads(capsys.readouterr().out)[0]["fix"]["title"]
    assert (title == MODERN_TITLE) == (target == "modern"), title


def test_cli_interpreter_flag_reads_metadata_too(
    tmp_path: Path, canary: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exe = fake_venv(tmp_path / "venv", "1.13")
    write_executable(exe, canary_script(canary))  # an explicit choice is still not run
    (tmp_path / "train.py").write_text(CUDA)
    args = ["check", "--format", "json", "--interpreter", str(exe), str(tmp_path / "train.py")]
    assert main(args) == 1
    assert json.loads(capsys.readouterr().out)[0]["fix"]["title"] != MODERN_TITLE
    assert not canary.exists()


def test_this_interpreter_resolves_from_its_own_metadata() -> None:
    # The development venv has torch_xla 2.9 installed.
    assert resolve_target(Settings(interpreter=sys.executable)) == "modern"
    assert resolve_target(Settings()) == "modern"
