"""A review fix that `fix` applies together with a later round's fix: the quick fix's title says
so in `check`'s words ("applied by `fix` together with XLA403's fix at line 8; on its own it
needs review"), not "review: changes behaviour". The rounds behind it run only when a code
action list shows a review fix, once per document version, never for diagnostics."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient
from xla_lens.cli.output import Reported, format_text
from xla_lens.engine import Settings, analyze
from xla_lens.engine.fix_plan import applied_later

from tests.engine.test_check_matches_fix import INDEX_DEVICE
from tests.helpers import src
from tests.lsp.lsp_helpers import initialize, open_text, send_edits, wait_published
from tests.lsp.test_large_documents import big_source

CODE = src(INDEX_DEVICE)
TOGETHER = "applied by `fix` together with XLA403's fix at line 8; on its own it needs review"


async def _stats(client: LanguageClient) -> Any:
    return await asyncio.wait_for(
        client.protocol.send_request_async("xla-lens/stats", {}), timeout=60
    )


async def _quick_fixes(client: LanguageClient, uri: str, diag: types.Diagnostic) -> list[str]:
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diag.range,
            context=types.CodeActionContext(
                diagnostics=[diag], only=[types.CodeActionKind.QuickFix]
            ),
        )
    )
    return [a.title for a in actions or [] if a.title.endswith(f"({diag.code})")]


async def _planned_title(client: LanguageClient, uri: str, diag: types.Diagnostic) -> str:
    """The quick fix's title once the plan is known: a list waits for it only briefly, and
    this machine may be slower than that; the editor asks again as the cursor moves."""
    for _ in range(100):
        (title,) = await _quick_fixes(client, uri, diag)
        if "review: changes behaviour" not in title:
            return title
        await asyncio.sleep(0.1)
    return title


def _check_fix_line(code: str, line: int) -> str:
    """The `fix:` line `check` prints for the XLA101 finding on ``line`` (0-based)."""
    found = analyze(code, "t.py", Settings(), "modern").findings
    later = applied_later(code, "t.py", Settings(), "modern", found)
    i = next(i for i, f in enumerate(found) if f.code == "XLA101" and f.span.start.line == line)
    text = format_text([Reported(Path("t.py"), found[i], later.get(i))])
    return text.split("\n    fix: ", 1)[1]


async def test_the_title_says_what_check_says_and_the_plan_runs_once_per_version(
    client: LanguageClient, tmp_path: Path
):
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, tmp_path / "t.py", CODE)
    published = await wait_published(client, uri, version=1)
    # Diagnostics alone run no fix plan.
    assert (await _stats(client)).fix_plans == 0
    diag = next(d for d in published.diagnostics if d.code == "XLA101" and d.range.start.line == 6)

    title = await _planned_title(client, uri, diag)
    assert TOGETHER in title and "review: changes behaviour" not in title
    # Word for word what `check` prints for it, with the rule code after it.
    assert title == f"{_check_fix_line(CODE, 6)} (XLA101)"
    assert (await _stats(client)).fix_plans == 1

    # Asked again (another cursor move) on the same version: the plan is reused.
    assert await _quick_fixes(client, uri, diag) == [title]
    other = next(d for d in published.diagnostics if d.code == "XLA101" and d.range.start.line == 8)
    (other_title,) = await _quick_fixes(client, uri, other)
    assert TOGETHER in other_title
    assert (await _stats(client)).fix_plans == 1

    # With XLA403's fix turned off nothing makes the device change safe: plain review.
    ignored = "torch.cuda.set_device(device)  # xla-lens: ignore[XLA403]"
    line = CODE.splitlines()[7]
    edit = types.TextEdit(
        range=types.Range(types.Position(7, 0), types.Position(7, len(line))),
        new_text=line.replace("torch.cuda.set_device(device)", ignored),
    )
    n = len(client.published)
    send_edits(client, uri, 2, [edit])
    after = await wait_published(client, uri, version=2, after=n)
    assert (await _stats(client)).fix_plans == 1
    diag = next(d for d in after.diagnostics if d.code == "XLA101" and d.range.start.line == 6)
    for _ in range(3):
        await asyncio.sleep(0.5)  # the plan has had time to finish
        (title,) = await _quick_fixes(client, uri, diag)
        assert title.endswith("(review: changes behaviour) (XLA101)")
    assert (await _stats(client)).fix_plans == 2


async def test_a_safe_quick_fix_runs_no_plan(client: LanguageClient, tmp_path: Path):
    code = "import torch\n\nnet = torch.nn.Linear(2, 2).cuda()\n"
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, tmp_path / "safe.py", code)
    published = await wait_published(client, uri, version=1)
    diag = next(d for d in published.diagnostics if d.code == "XLA101")
    (title,) = await _quick_fixes(client, uri, diag)
    assert "review" not in title and "applied by" not in title
    assert (await _stats(client)).fix_plans == 0


async def test_a_slow_plan_does_not_hold_up_the_list(client: LanguageClient, tmp_path: Path):
    # Thousands of lines with a review fix on most: the plan is a Fix all of all of them
    # (seconds), the list answers after a short wait with the plain review title.
    code = CODE.replace('if __name__ == "__main__":\n    main()\n', "") + big_source(100_000)
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, tmp_path / "big.py", code)
    published = await wait_published(client, uri, version=1)
    diag = next(d for d in published.diagnostics if d.code == "XLA101" and d.range.start.line == 6)
    started = time.monotonic()
    (title,) = await _quick_fixes(client, uri, diag)
    assert time.monotonic() - started < 3.0
    assert title.endswith("(review: changes behaviour) (XLA101)")
    assert (await _stats(client)).fix_plans == 1
