"""The server resolves ``target = auto`` for a workspace without running the interpreter
the workspace's pyproject.toml names: opening, hovering and asking for code actions leave
no canary, and the version still comes from the venv's dist-info metadata."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from tests.fake_env import canary_script, fake_venv, write_executable
from tests.lsp.lsp_helpers import initialize, open_text, wait_published

CUDA = "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n"


def evil_sh(ws: Path, canary: Path) -> str:
    write_executable(ws / "evil.sh", canary_script(canary))
    # Absolute: the server's own working folder is not the workspace's.
    return str(ws / "evil.sh")


def script_venv(ws: Path, canary: Path) -> str:
    write_executable(ws / ".venv" / "bin" / "python", canary_script(canary))
    return ".venv/bin/python"


def pth_venv(ws: Path, canary: Path) -> str:
    exe = fake_venv(ws / "env", "2.9.0", python=Path(os.path.realpath(sys.executable)))
    site = next((ws / "env" / "lib").glob("python*/site-packages"))
    (site / "evil.pth").write_text(f"import os; open({str(canary)!r}, 'w').write('pth')\n")
    return str(exe)


@pytest.mark.parametrize("attack", [evil_sh, script_venv, pth_venv], ids=lambda f: f.__name__)
async def test_open_hover_and_actions_never_run_the_workspace_interpreter(
    client, tmp_path: Path, attack
) -> None:
    canary = tmp_path / "canary"
    ws = tmp_path / "ws"
    ws.mkdir()
    interpreter = attack(ws, canary)
    (ws / "pyproject.toml").write_text(f'[tool.xla-lens]\ninterpreter = "{interpreter}"\n')
    script = ws / "train.py"
    script.write_text(CUDA)
    await initialize(client, folders=[ws], settings={"target": "auto"})
    uri = open_text(client, script)
    published = await wait_published(client, uri)
    assert any(d.code == "XLA101" for d in published.diagnostics)
    await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(2, 30))
    )
    await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            types.Range(types.Position(0, 0), types.Position(3, 0)),
            types.CodeActionContext(diagnostics=list(published.diagnostics)),
        )
    )
    assert not canary.exists(), f"the server executed the workspace's {attack.__name__}"


async def test_auto_comes_from_the_workspace_venv_metadata(client, tmp_path: Path) -> None:
    fake_venv(tmp_path / ".venv", "1.13")
    (tmp_path / "pyproject.toml").write_text('[tool.xla-lens]\ninterpreter = ".venv/bin/python"\n')
    script = tmp_path / "train.py"
    script.write_text(CUDA)
    await initialize(client, folders=[tmp_path])
    published = await wait_published(client, open_text(client, script))
    messages = [d.message for d in published.diagnostics if d.code == "XLA101"]
    assert messages and "xm.xla_device()" in messages[0], messages
