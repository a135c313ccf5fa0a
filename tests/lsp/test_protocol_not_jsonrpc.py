"""Valid JSON that is no JSON-RPC 2.0 message: a request without ``"jsonrpc"`` is answered
with InvalidRequest, anything else is logged in one line; no traceback, and the server keeps
answering. Raw over stdio like ``test_protocol_frames``."""

from __future__ import annotations

import json

import pytest

from tests.lsp.test_protocol_frames import RawServer, frame, stats


def raw_frame(body: bytes) -> bytes:
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_a_request_without_jsonrpc_gets_an_invalid_request_error(server: RawServer) -> None:
    server.send(raw_frame(json.dumps({"id": 21, "method": "xla-lens/stats"}).encode()))
    answer = server.response(21)
    assert answer is not None, "a request without 'jsonrpc' was never answered"
    assert answer["error"]["code"] == -32600
    server.send(frame(stats(22)))
    assert server.response(22) is not None
    assert "Traceback" not in server.stop()


@pytest.mark.parametrize("body", [b"{}", b"[]", b"42", b'"text"', b"null", b'[{"id": 1}]'])
def test_other_json_is_logged_without_a_traceback(server: RawServer, body: bytes) -> None:
    server.send(raw_frame(body) + frame(stats(23)))
    assert server.response(23) is not None
    err = server.stop()
    assert "Traceback" not in err, err
    assert "not JSON-RPC 2.0" in err


@pytest.fixture
def server():
    raw = RawServer()
    yield raw
    if raw.proc.poll() is None:
        raw.stop()
