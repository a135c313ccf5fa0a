"""Protocol robustness, raw over stdio: no request goes unanswered because its params are
invalid, and a malformed frame never leaves the server alive but deaf.

These talk bytes to ``python -m xla_lens.lsp`` directly (a client library would refuse to
send such frames); every wait is bounded.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from typing import Any

import pytest

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
WAIT_S = 10.0


def frame(message: dict[str, Any], *, length: int | str | None = None, eol: str = "\r\n") -> bytes:
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body) if length is None else length}{eol}{eol}".encode() + body


def stats(msg_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "xla-lens/stats", "params": None}


def hover(msg_id: int, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover", "params": params}


class RawServer:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "xla_lens.lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._out = b""
        self.send(frame(INITIALIZE))
        assert self.response(1) is not None
        self.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _messages(self) -> list[dict[str, Any]]:
        found, rest = [], self._out
        while b"\r\n\r\n" in rest:
            head, body = rest.split(b"\r\n\r\n", 1)
            length = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
            if len(body) < length:
                break
            found.append(json.loads(body[:length]))
            rest = body[length:]
        return found

    def response(self, msg_id: int, timeout: float = WAIT_S) -> dict[str, Any] | None:
        """The response to ``msg_id``; None if the server exited or stayed silent."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            for message in self._messages():
                if message.get("id") == msg_id and "method" not in message:
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.2))
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    return None
                self._out += chunk

    def stop(self) -> str:
        """Kill the server; its stderr."""
        self.proc.kill()
        _, err = self.proc.communicate(timeout=WAIT_S)
        return err.decode(errors="replace")


@pytest.fixture
def server():
    raw = RawServer()
    yield raw
    if raw.proc.poll() is None:
        raw.stop()


@pytest.mark.parametrize(
    "params",
    [
        None,
        {"textDocument": {"uri": "file:///x.py"}, "position": {"line": -1, "character": 0}},
        {"textDocument": {"uri": "file:///x.py"}, "position": {"line": 0, "character": -3}},
        {"textDocument": {"uri": "file:///x.py"}},
        "not an object",
    ],
    ids=["null", "negative-line", "negative-character", "no-position", "string"],
)
def test_invalid_params_get_an_invalid_params_error(server: RawServer, params: Any):
    server.send(frame(hover(7, params)))
    answer = server.response(7)
    assert answer is not None, "no answer to a request with invalid params"
    assert answer["error"]["code"] == -32602
    assert "textDocument/hover" in answer["error"]["message"]
    # And the server keeps answering.
    server.send(frame(stats(8)))
    assert server.response(8) is not None


BAD_FRAMES = {
    "length-too-small": frame(stats(10), length=20),
    "length-too-large": frame(stats(10), length=500),
    "length-not-a-number": frame(stats(10), length="abc"),
    "lf-only-headers": frame(stats(10), eol="\n"),
    "garbage-header": b"hello world\r\n\r\n",
    "no-headers": json.dumps(stats(10)).encode(),
    "body-not-json": b"Content-Length: 9\r\n\r\nnot json!",
}


@pytest.mark.parametrize("bad", BAD_FRAMES.values(), ids=BAD_FRAMES.keys())
def test_after_a_malformed_frame_the_next_request_is_answered(server: RawServer, bad: bytes):
    started = time.monotonic()
    server.send(bad)
    time.sleep(0.2)  # the bad frame arrives on its own, as it would from a buggy client
    server.send(frame(stats(11)))
    answer = server.response(11)
    if answer is None:
        # The other acceptable outcome: the server exits with its reason on stderr.
        assert server.proc.wait(timeout=WAIT_S) != 0
        assert "xla-lens" in server.stop()
        return
    assert "result" in answer and answer["result"]["pid"] == server.proc.pid
    assert time.monotonic() - started < WAIT_S
    err = server.stop()
    if bad is not BAD_FRAMES["lf-only-headers"]:
        assert "malformed LSP frame" in err


def test_a_request_in_an_unreadable_frame_is_answered_with_a_parse_error(server: RawServer):
    broken = b'{"jsonrpc": "2.0", "id": 12, "method": "xla-lens/stats", "params": {'
    server.send(f"Content-Length: {len(broken)}\r\n\r\n".encode() + broken)
    answer = server.response(12)
    assert answer is not None and answer["error"]["code"] == -32700
    server.send(frame(stats(13)))
    assert server.response(13) is not None
