"""The server analyses workspace code; it never executes it (only the explicit run command
does, in a subprocess, with argv lists)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lsprotocol import types

from tests.lsp.lsp_helpers import initialize, open_text, wait_published

ROOT = Path(__file__).resolve().parents[2]


def booby_trapped(marker: Path) -> str:
    # Every way a careless tool could run this file writes the marker.
    return (
        "import torch\n"
        f"open({str(marker)!r}, 'w').write('imported')\n"
        "model = torch.nn.Linear(2, 2).cuda()\n"
        "def main():\n"
        f"    open({str(marker)!r}, 'w').write('main ran')\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    )


async def test_analysis_hover_actions_and_convert_never_execute_the_script(client, tmp_path: Path):
    applied: list[types.ApplyWorkspaceEditParams] = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        applied.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    marker = tmp_path / "executed"
    script = tmp_path / "trap.py"
    script.write_text(booby_trapped(marker))
    # target auto makes the server look at the interpreter's torch_xla: still no user code.
    await initialize(client, folders=[tmp_path], settings={"target": "auto"})
    uri = open_text(client, script)
    published = await wait_published(client, uri)
    assert any(d.code == "XLA101" for d in published.diagnostics)
    await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(2, 30))
    )
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            types.Range(types.Position(0, 0), types.Position(7, 0)),
            types.CodeActionContext(diagnostics=list(published.diagnostics)),
        )
    )
    for action in actions or []:
        if isinstance(action, types.CodeAction):
            await client.code_action_resolve_async(action)
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="xla-lens.convert", arguments=[uri])
    )
    assert applied, "convert sent no edit"
    assert not marker.exists(), marker.read_text()


def test_run_arguments_reach_the_script_verbatim_without_a_shell(tmp_path: Path):
    marker = tmp_path / "pwned"
    script = tmp_path / "echo_args.py"
    script.write_text("import sys\nprint('ARGV=' + repr(sys.argv[1:]))\n")
    hostile = [f"; touch {marker}", f"$(touch {marker})", f"`touch {marker}`", "a b", "*"]
    out = subprocess.run(
        [sys.executable, "-m", "xla_lens", "run", str(script), "--device", "CPU", "--", *hostile],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"ARGV={hostile!r}" in out.stdout
    assert not marker.exists()
