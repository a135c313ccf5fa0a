"""Editor settings (section ``xla-lens``), per workspace folder, layered on pyproject.toml.

Precedence, lowest first: defaults, ``[tool.xla-lens]`` in the nearest pyproject.toml,
the editor's settings for the workspace folder that holds the document. Editor values
that are unset (``None``, ``""``, ``[]``, ``{}``) do not override pyproject, so a client
that always sends its defaults should send them empty.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pygls.uris import to_fs_path

from ..engine.config import (
    ConfigError,
    Settings,
    resolve_target,
    settings_for_path,
    settings_from_mapping,
)
from ..rules.base import Target

SECTION = "xla-lens"
KEYS = ("target", "select", "ignore", "severity", "interpreter")
log = logging.getLogger("xla_lens.lsp")

Fetch = Callable[[str | None], Awaitable[Mapping[str, Any] | None]]


def clean_editor_settings(raw: Any) -> dict[str, Any]:
    """The keys the user actually set. Accepts ``{"xla-lens": {...}}`` as well, which is
    what ``didChangeConfiguration`` and ``initializationOptions`` usually carry."""
    if not isinstance(raw, Mapping):
        return {}
    if SECTION in raw and isinstance(raw[SECTION], Mapping):
        raw = raw[SECTION]
    return {k: raw[k] for k in KEYS if k in raw and raw[k] not in (None, "", [], {})}


@dataclass(frozen=True)
class Resolved:
    settings: Settings
    target: Target
    # Problems with the settings, shown to the user once; the defaults were used instead.
    problems: tuple[str, ...] = ()


def layer(path: str | None, editor: Mapping[str, Any]) -> tuple[Settings, list[str]]:
    problems: list[str] = []
    base = Settings()
    if path:
        try:
            base = settings_for_path(Path(path), Settings())
        except (ConfigError, OSError) as exc:
            problems.append(str(exc))
    try:
        return settings_from_mapping(dict(editor), base), problems
    except ConfigError as exc:
        problems.append(f"xla-lens editor settings: {exc}")
        return base, problems


def folder_for(uri: str, folders: list[str]) -> str | None:
    """The innermost workspace folder that contains ``uri`` (multi-root, nested roots)."""
    best: str | None = None
    for folder in folders:
        prefix = folder.rstrip("/") + "/"
        if uri.startswith(prefix) and (best is None or len(folder) > len(best)):
            best = folder
    return best


class SettingsStore:
    """Caches editor settings per folder; ``fetch`` asks the client (workspace/configuration)."""

    def __init__(self, fetch: Fetch | None = None) -> None:
        self.fetch = fetch
        self.global_settings: dict[str, Any] = {}
        self._by_folder: dict[str | None, dict[str, Any]] = {}
        self._reported: set[str] = set()

    def invalidate(self, pushed: Any = None) -> None:
        """Forget cached editor settings; ``pushed`` is a didChangeConfiguration payload."""
        self._by_folder.clear()
        cleaned = clean_editor_settings(pushed)
        if cleaned or (isinstance(pushed, Mapping) and SECTION in pushed):
            self.global_settings = cleaned

    async def editor_settings(self, folder: str | None, scope_uri: str | None) -> dict[str, Any]:
        if folder in self._by_folder:
            return self._by_folder[folder]
        values = dict(self.global_settings)
        if self.fetch is not None:
            try:
                fetched = await self.fetch(folder or scope_uri)
            except Exception as exc:  # a client that cannot answer keeps the pushed values
                log.info("workspace/configuration failed: %s", exc)
                fetched = None
            values.update(clean_editor_settings(fetched))
        self._by_folder[folder] = values
        return values

    async def for_document(self, uri: str, folders: list[str]) -> Resolved:
        editor = await self.editor_for(uri, folders)
        # pyproject reads and the metadata read behind target = auto stay off the loop.
        return self.fresh(await asyncio.to_thread(resolve_blocking, uri, editor))

    async def editor_for(self, uri: str, folders: list[str]) -> dict[str, Any]:
        return await self.editor_settings(folder_for(uri, folders), uri)

    def fresh(self, resolved: Resolved) -> Resolved:
        """``resolved`` with only the problems not reported before (on the event loop)."""
        fresh = tuple(p for p in resolved.problems if p not in self._reported)
        self._reported.update(fresh)
        return Resolved(resolved.settings, resolved.target, fresh)


def resolve_blocking(uri: str, editor: Mapping[str, Any]) -> Resolved:
    """A document's settings and target from the editor's settings and its pyproject.toml:
    file reads, so call it off the event loop (``SettingsStore.fresh`` then drops problems
    already reported)."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    settings, problems = layer(path, editor)
    return Resolved(settings, resolve_target(settings), tuple(problems))
