"""Hover on the APIs the rules touch, with UTF-16 cursor positions."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient
from xla_lens.lsp.hover import hover_table
from xla_lens.rules.base import doc_url
from xla_lens.rules.registry import fix_safety, get_rule, short_doc

from tests.lsp.lsp_helpers import DATA, initialize, open_text, utf16_col, wait_published

SAMPLE = DATA / "train_cuda.py"


async def _hover(client: LanguageClient, uri: str, line: int, character: int) -> types.Hover | None:
    return await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
    )


async def test_hover_explains_the_api_and_lists_findings_on_the_line(client: LanguageClient):
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, SAMPLE)
    await wait_published(client, uri, version=1)
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()

    # On `device` of torch.device("cuda").
    col = lines[4].index("torch.device") + len("torch.de")
    hover = await _hover(client, uri, 4, col)
    assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
    text = hover.contents.value
    assert "XLA101" in text and "`torch_xla.device()`" in text and "`xm.xla_device()`" in text
    assert "xla-lens on this line" in text
    # The rule's short form, its fix-safety line and a link to its page.
    rule = get_rule("XLA101")
    assert short_doc(rule) in text and f"Fix safety: {fix_safety(rule)}" in text
    assert f"({doc_url(rule)})" in text
    start = lines[4].index("torch.device")
    assert hover.range.start == types.Position(line=4, character=start)

    # On `.cuda` after a non-ASCII identifier: the position is in UTF-16 units.
    line5 = lines[5]
    cp = line5.index(".cuda") + 2
    hover = await _hover(client, uri, 5, utf16_col(line5, cp))
    assert hover is not None
    assert "XLA101" in hover.contents.value
    assert "Replace .cuda() with .to(device)" in hover.contents.value

    # Nothing to say on a plain comment or on `loss.backward()`'s line with no finding.
    assert await _hover(client, uri, 3, 3) is None
    assert await _hover(client, uri, 11, 6) is None


def test_every_hover_key_names_an_api_form_the_resolver_understands():
    # Keys are qualified names, ".method", "name=" / "call(name=)", or "prefix.*".
    for key in hover_table():
        assert (
            key.startswith(".")
            or key.endswith(("=", "=)", ".*"))
            or key.replace(".", "").replace("_", "").isalnum()
        ), key


async def test_hover_resolves_aliases_keywords_and_other_rules_apis(client: LanguageClient):
    table = hover_table()
    path = DATA / "apis.py"
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, path)
    await wait_published(client, uri, version=1)
    lines = path.read_text(encoding="utf-8").splitlines()
    cases = [
        # (line, text under the cursor, hover key whose text must be shown)
        (6, "mark_step", "torch_xla.core.xla_model.mark_step"),
        (5, "DataLoader", "torch.utils.data.DataLoader"),
        (4, "optim", "transformers.TrainingArguments"),  # a keyword of the call
    ]
    for line, needle, key in cases:
        if key not in table:
            continue  # that rule is not in this checkout
        hover = await _hover(client, uri, line, lines[line].index(needle) + 1)
        assert hover is not None, needle
        assert table[key][0].strip() in hover.contents.value, needle
    assert any(key in table for _, _, key in cases)
