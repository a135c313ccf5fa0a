"""Client-side helpers for the end-to-end tests: a real pytest-lsp client, plus an
independent UTF-16 edit applier (so the server's own conversion is not used to check
itself)."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

DATA = Path(__file__).parent / "data"
SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "xla_lens.lsp"])
TIMEOUT = 30.0


def record_publications(client: LanguageClient) -> None:
    """Keep every publishDiagnostics (with its version), not just the latest per uri."""
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]
    client.published = []  # type: ignore[attr-defined]
    client.published_event = asyncio.Event()  # type: ignore[attr-defined]

    def record(params: types.PublishDiagnosticsParams) -> None:
        original(params)
        client.published.append(params)  # type: ignore[attr-defined]
        client.published_event.set()  # type: ignore[attr-defined]

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record


def prepare(client: LanguageClient) -> None:
    """Record publications and accept dynamic registrations, as VS Code does
    (pytest-lsp has no default handler for client/registerCapability)."""
    record_publications(client)
    client.registrations = []  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)  # type: ignore[attr-defined]


async def wait_published(
    client: LanguageClient,
    uri: str,
    version: int | None = None,
    after: int = 0,
    timeout: float = TIMEOUT,
) -> types.PublishDiagnosticsParams:
    """The first publication for ``uri`` (at ``version``) past index ``after``."""
    published: list[types.PublishDiagnosticsParams] = client.published  # type: ignore[attr-defined]

    async def find() -> types.PublishDiagnosticsParams:
        while True:
            for p in published[after:]:
                if p.uri == uri and (version is None or p.version == version):
                    return p
            client.published_event.clear()  # type: ignore[attr-defined]
            await client.published_event.wait()  # type: ignore[attr-defined]

    return await asyncio.wait_for(find(), timeout)


async def initialize(
    client: LanguageClient,
    *,
    profile: str = "visual-studio-code",
    folders: list[Path] | None = None,
    settings: dict[str, Any] | None = None,
    debounce_ms: int = 20,
    capabilities: types.ClientCapabilities | None = None,
) -> types.InitializeResult:
    folders = folders if folders is not None else [DATA]
    options: dict[str, Any] = {"debounceMs": debounce_ms}
    if settings is not None:
        options["settings"] = settings
    return await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities or client_capabilities(profile),
            root_uri=folders[0].as_uri() if folders else None,
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
            initialization_options=options,
        )
    )


def open_text(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id="python",
                version=version,
                text=path.read_text(encoding="utf-8") if text is None else text,
            )
        )
    )
    return uri


def utf16_col(line: str, code_points: int) -> int:
    return len(line[:code_points].encode("utf-16-le")) // 2


def lsp_lines(text: str) -> list[str]:
    """Lines as LSP counts them (ended by \\n, \\r\\n or \\r only), with terminators;
    written here independently of the server's own splitting."""
    parts = re.split(r"(\r\n|\r|\n)", text)
    lines = [parts[i] + parts[i + 1] for i in range(0, len(parts) - 1, 2)]
    return lines + ([parts[-1]] if parts[-1] else [])


def _offset(text: str, pos: types.Position) -> int:
    lines = lsp_lines(text)
    if pos.line >= len(lines):
        return len(text)
    start = sum(len(line) for line in lines[: pos.line])
    line = lines[pos.line].rstrip("\r\n")
    encoded = line.encode("utf-16-le")[: pos.character * 2]
    return start + len(encoded.decode("utf-16-le"))


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(
        ((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def edits_of(edit: types.WorkspaceEdit, uri: str) -> tuple[list[types.TextEdit], int | None]:
    """The text edits for ``uri`` and the document version they were made for."""
    if edit.document_changes:
        for change in edit.document_changes:
            if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri:
                return list(change.edits), change.text_document.version  # type: ignore[arg-type]
    if edit.changes and uri in edit.changes:
        return list(edit.changes[uri]), None
    raise AssertionError(f"no edits for {uri} in {edit}")


def send_edits(client: LanguageClient, uri: str, version: int, edits: list[types.TextEdit]) -> None:
    """Apply ``edits`` on the server's copy as incremental changes (last edit first, so
    each range still refers to the text it was computed for)."""
    ordered = sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                for e in ordered
            ],
        )
    )
