"""The server object every feature module receives: state, settings, logging, guards.

Feature modules (documents, actions, hover, commands, and later ones such as the run
command or inlay hints) each expose ``register(ls)`` and attach their handlers through
``ls.feature`` / ``ls.command`` wrapped in ``ls.guarded``, so that one failing handler
is logged to the client and never takes the server down.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from .framing import start_stdio
from .memory import IdleCollector
from .positions import UTF16
from .protocol import XlaLensProtocol
from .settings import SECTION, SettingsStore
from .state import AnalysisCache, CarriedState, Entry

log = logging.getLogger("xla_lens.lsp")

F = TypeVar("F", bound=Callable[..., Any])
AnalysisListener = Callable[["XlaLensServer", Entry], None]

DEFAULT_DEBOUNCE_S = 0.15
CONFIG_TIMEOUT_S = 5.0


class XlaLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "xla-lens",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=XlaLensProtocol,
        )
        self.cache = AnalysisCache()
        self.settings = SettingsStore(fetch=self._fetch_configuration)
        self.debounce_s = DEFAULT_DEBOUNCE_S
        self.pending: dict[str, asyncio.Task[None]] = {}
        # The analysis running for each document, keyed by (version, settings generation):
        # a hover or code action arriving meanwhile waits for it instead of starting another.
        self.inflight: dict[str, tuple[tuple[int | None, int], asyncio.Future[Any]]] = {}
        # Bumped whenever settings may have changed, so cached analyses of the same
        # version are no longer current.
        self.generation = 0
        self.analyses = 0  # full analyses run, reported by xla-lens/stats
        # uri → findings carried over comment-only edits and published before the document's
        # analysis finished (lsp/carried.py); ``carried_publishes`` counts them for stats.
        self.carried: dict[str, CarriedState] = {}
        self.carried_publishes = 0
        # Documents whose pending analysis waits for the typing to pause (after a carry).
        self.deferred: set[str] = set()
        self.idle_collector = IdleCollector(lambda: bool(self.pending or self.inflight))
        # Called after every successful analysis (e.g. to refresh inlay hints / code lenses).
        self.analysis_listeners: list[AnalysisListener] = []

    @property
    def protocol_ext(self) -> XlaLensProtocol:
        return self.protocol  # type: ignore[return-value]

    def _start_io_async(self, stdin: Any = None, stdout: Any = None) -> None:
        # pygls' reader never recovers from a malformed frame; ours resynchronises.
        start_stdio(self, stdin, stdout)

    # --- client facts ----------------------------------------------------------------
    @property
    def encoding(self) -> str:
        try:
            return str(self.workspace.position_encoding or UTF16)
        except Exception:  # before initialize there is no workspace yet
            return UTF16

    def folders(self) -> list[str]:
        try:
            return list(self.workspace.folders.keys())
        except Exception:
            return []

    def client_supports(self, dotted: str) -> bool:
        node: Any = self.client_capabilities
        for part in dotted.split("."):
            node = getattr(node, part, None)
            if node is None:
                return False
        return bool(node)

    def resolve_supports_edit(self) -> bool:
        support = None
        caps = self.client_capabilities
        if caps.text_document and caps.text_document.code_action:
            support = caps.text_document.code_action.resolve_support
        return support is not None and "edit" in support.properties

    # --- client messages ---------------------------------------------------------------
    def log_client(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # no transport (tests of helpers, shutting down)
            log.log(logging.ERROR if kind == types.MessageType.Error else logging.INFO, message)

    def show_client(
        self, message: str, kind: types.MessageType = types.MessageType.Warning
    ) -> None:
        try:
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        except Exception:
            log.warning(message)

    def report(self, where: str) -> None:
        """Log the exception being handled to the client, with its traceback."""
        self.log_client(
            f"xla-lens: {where} failed:\n{traceback.format_exc()}", types.MessageType.Error
        )

    def guarded(self, where: str, default: Any = None) -> Callable[[F], F]:
        """Wrap a handler so an exception is logged and ``default`` returned instead."""

        def decorate(fn: F) -> F:
            if inspect.iscoroutinefunction(fn):

                @functools.wraps(fn)
                async def run_async(*args: Any, **kwargs: Any) -> Any:
                    try:
                        return await fn(*args, **kwargs)
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        self.report(where)
                        return default

                return run_async  # type: ignore[return-value]

            @functools.wraps(fn)
            def run(*args: Any, **kwargs: Any) -> Any:
                try:
                    return fn(*args, **kwargs)
                except Exception:
                    self.report(where)
                    return default

            return run  # type: ignore[return-value]

        return decorate

    def spawn(self, coro: Any, where: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; its failure is reported, never raised."""
        task = asyncio.ensure_future(coro)

        def done(t: asyncio.Task[Any]) -> None:
            if not t.cancelled() and t.exception() is not None:
                exc = t.exception()
                self.log_client(
                    f"xla-lens: {where} failed: " + "".join(traceback.format_exception(exc)),
                    types.MessageType.Error,
                )

        task.add_done_callback(done)
        return task

    # --- configuration -----------------------------------------------------------------
    async def _fetch_configuration(self, scope_uri: str | None) -> Mapping[str, Any] | None:
        if not self.client_supports("workspace.configuration"):
            return None
        params = types.ConfigurationParams(
            items=[types.ConfigurationItem(scope_uri=scope_uri, section=SECTION)]
        )
        result = await asyncio.wait_for(
            self.workspace_configuration_async(params), timeout=CONFIG_TIMEOUT_S
        )
        return result[0] if result else None
