"""pygls' language-server protocol, with three gaps closed.

- Documents keep LSP line semantics (``textdocument.LspWorkspace``).
- A request whose params do not fit the method's type (a negative line, ``null`` params)
  is answered with JSON-RPC InvalidParams; pygls only logged it and left the client
  waiting forever.
- ``$/cancelRequest`` reaches work the request started: pygls cancels only the request's
  own future, which for ``workspace/executeCommand`` is a wrapper around the command's
  task, so a cancelled command kept running. Handlers register what to cancel with
  ``on_cancel``.
- Valid JSON that is no JSON-RPC message is logged in one line (a request among them is
  answered with InvalidRequest) instead of failing with a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.protocol import LanguageServerProtocol, lsp_method

from .textdocument import LspWorkspace

log = logging.getLogger("xla_lens.lsp")

MsgId = int | str


class Rejected:
    """A request that could not be read: answered with ``error`` instead of handled."""

    jsonrpc = "2.0"

    def __init__(self, msg_id: MsgId, method: str, error: types.ResponseError) -> None:
        self.id = msg_id
        self.method = method
        self.error = error


class XlaLensProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cancel_hooks: dict[MsgId, list[Callable[[], None]]] = {}

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        # pygls builds its Workspace first thing, before yielding to our initialize
        # handler; swap it for one with LSP line semantics before anyone sees it.
        steps = super().lsp_initialize(params)
        swapped = False
        value: Any = None
        while True:
            try:
                step = steps.send(value)
            except StopIteration as done:
                if not swapped:
                    self._workspace = LspWorkspace.like(self.workspace)
                return done.value
            if not swapped:
                self._workspace = LspWorkspace.like(self.workspace)
                swapped = True
            value = yield step

    # --- invalid params ----------------------------------------------------------------
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except Exception as exc:
            if not ("id" in data and "method" in data and isinstance(data["id"], int | str)):
                raise  # a notification or a response: nobody waits for an answer
            error = (
                exc if isinstance(exc, JsonRpcInvalidParams) else JsonRpcInvalidParams()
            ).to_response_error()
            reason = "params are missing" if data.get("params") is None else _reason(exc)
            error.message = f"invalid params for {data['method']}: {reason}"
            return Rejected(data["id"], str(data["method"]), error)

    def handle_message(self, message: Any) -> None:
        if not hasattr(message, "jsonrpc"):
            # Valid JSON but no JSON-RPC message (no "jsonrpc" member, a batch array, a
            # number): pygls failed on it with a traceback and left a request unanswered.
            self._reject_invalid_request(message)
            return
        if isinstance(message, Rejected):
            log.warning(
                "answered request %s (%s) with an error: %s",
                message.id,
                message.method,
                message.error.message,
            )
            self._send_response(message.id, error=message.error)
            return
        super().handle_message(message)

    def _reject_invalid_request(self, message: Any) -> None:
        msg_id = message.get("id") if isinstance(message, dict) else None
        kind = type(message).__name__
        if isinstance(msg_id, int | str) and not isinstance(msg_id, bool):
            log.warning("answered request %s with an error: not a JSON-RPC 2.0 message", msg_id)
            error = JsonRpcInvalidRequest().to_response_error()
            error.message = 'not a JSON-RPC 2.0 request (it needs "jsonrpc": "2.0")'
            self._send_response(msg_id, error=error)
        else:
            log.warning("ignored a message that is not JSON-RPC 2.0 (a JSON %s)", kind)

    def reject_unreadable(self, msg_id: MsgId, reason: str) -> None:
        """Answer a request whose frame could not be parsed (the framing layer found its id)."""
        error = JsonRpcParseError().to_response_error()
        error.message = f"the request could not be read: {reason}"
        self._send_response(msg_id, error=error)

    def _execute_handler(
        self,
        msg_id: MsgId,
        handler: Any,
        callback: Callable[[Any], None],
        args: Any = None,
        kwargs: Any = None,
    ) -> None:
        # pygls files the future of every notification and every step of a built-in
        # handler under a fresh id and never removes it: one leaked future per didChange.
        def done(future: Any) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            try:
                callback(future)
            except asyncio.CancelledError:
                # A built-in handler's step cancelled as the loop closes on exit: pygls
                # re-raises it from a callback, which printed a traceback at every exit.
                log.debug("handler %s cancelled", msg_id)

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    # --- cancellation ------------------------------------------------------------------
    def on_cancel(self, msg_id: MsgId | None, hook: Callable[[], None]) -> Callable[[], None]:
        """Call ``hook`` when the client cancels request ``msg_id``; returns the function
        that unregisters it (call it when the request finishes)."""
        if msg_id is None:
            return lambda: None
        self._cancel_hooks.setdefault(msg_id, []).append(hook)

        def forget() -> None:
            hooks = self._cancel_hooks.get(msg_id, [])
            if hook in hooks:
                hooks.remove(hook)
            if not hooks:
                self._cancel_hooks.pop(msg_id, None)

        return forget

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        super()._handle_cancel_notification(msg_id)
        for hook in self._cancel_hooks.pop(msg_id, []):
            try:
                hook()
            except Exception:
                log.exception("cancelling request %s failed", msg_id)


def _reason(exc: BaseException) -> str:
    """The innermost message, e.g. "Position.line should be in range [0:2147483647]"."""
    seen = exc
    while True:
        nested = getattr(seen, "exceptions", None)
        if nested:
            seen = nested[0]
        elif seen.__cause__ is not None:
            seen = seen.__cause__
        else:
            break
    return str(seen) or type(seen).__name__
