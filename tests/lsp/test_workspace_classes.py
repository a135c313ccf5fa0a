"""XLA118 through the real language server: a class of a sibling module, constructed in the
open (unsaved) buffer, is named at the constructor with the lines of the other file; the
sibling is read from disk, and an edit of it is seen on the next analysis."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import initialize, open_text, send_edits, wait_published

TRAINER = """\
import torch


class Trainer:
    def __init__(self, model):
        self.model = model.cuda()

    def fit(self):
        torch.cuda.manual_seed(0)
"""

CLEAN = """\
class Trainer:
    def __init__(self, model):
        self.model = model

    def fit(self):
        return None
"""


def _xla118(params: types.PublishDiagnosticsParams) -> list[types.Diagnostic]:
    return [d for d in params.diagnostics if d.code == "XLA118"]


async def test_a_sibling_class_is_named_at_its_constructor_in_the_buffer(
    client: LanguageClient, tmp_path: Path
):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "trainer.py").write_text(TRAINER)
    script = tmp_path / "train.py"
    script.write_text("")  # on disk: empty; the buffer is what is analysed
    await initialize(client, folders=[tmp_path], settings={"target": "modern"})
    text = "from trainer import Trainer\nt = Trainer(None)\nt.fit()\n"
    uri = open_text(client, script, text=text)
    first = _xla118(await wait_published(client, uri, version=1))
    assert [d.range.start.line for d in first] == [1, 2]
    assert "Trainer() runs code in trainer.py" in first[0].message
    assert "line 6:" in first[0].message and "(XLA101)" in first[0].message
    assert "t.fit() (Trainer.fit) runs code in trainer.py" in first[1].message

    # The sibling is converted on disk; the next analysis of the buffer reads it again.
    (tmp_path / "trainer.py").write_text(CLEAN)
    n = len(client.published)  # type: ignore[attr-defined]
    end = types.Position(line=3, character=0)
    send_edits(client, uri, 2, [types.TextEdit(types.Range(end, end), "print(t)\n")])
    second = await wait_published(client, uri, version=2, after=n)
    assert _xla118(second) == []
