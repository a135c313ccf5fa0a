"""Reading LSP frames from stdin, resynchronising after a malformed one.

pygls' reader trusts every frame: one wrong ``Content-Length``, a non-numeric one or
LF-only headers and it reads the following messages as part of a body (or waits for bytes
that never come), so the server stayed alive and never answered again. Here:

- headers may end with ``\\r\\n`` or ``\\n``; names are case-insensitive;
- a frame whose body is not one JSON value, a missing or non-numeric ``Content-Length``,
  or a frame that stops arriving for ``STALL_S`` seconds, is logged to stderr with the
  reason, and everything up to the next ``Content-Length:`` header is taken as the broken
  message. If that text is one JSON message (the length was merely wrong) it is handled;
  otherwise a request id found in it is answered with a parse error, so the client is never
  left waiting.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from pygls.io_ import StdoutWriter

log = logging.getLogger("xla_lens.lsp")

STALL_S = 2.0
MAX_HEADER_LINE = 64 * 1024
_HEADER_NAME = re.compile(rb"[A-Za-z][A-Za-z0-9-]*")
_NEXT_HEADER = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_REQUEST_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_CHUNK = 1 << 16


@dataclass
class Frame:
    message: Any = None
    # Set when the frame was malformed: why, and the bytes taken as its message.
    problem: str | None = None
    junk: bytes = b""


class StdinPump:
    """Chunks of ``stream`` as they arrive, read on a daemon thread (so a blocked read never
    keeps the process alive at exit)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump, name="xla-lens-stdin", daemon=True).start()

    def _read(self) -> bytes:
        # os.read on the descriptor, not the buffered reader: a daemon thread blocked
        # inside BufferedReader holds its lock, and interpreter shutdown aborts on it.
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            read1 = getattr(self._stream, "read1", None)
            return read1(_CHUNK) if read1 is not None else self._stream.read(1)
        return os.read(fd, _CHUNK)

    def _pump(self) -> None:
        while True:
            try:
                chunk = self._read()
            except (OSError, ValueError):
                chunk = b""
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, chunk)
            except RuntimeError:  # the loop is closed: the server is exiting
                return
            if not chunk:
                return

    async def get(self, timeout: float | None) -> bytes | None:
        """The next chunk; ``b""`` at end of input, None when none came within ``timeout``."""
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None


class FrameReader:
    def __init__(
        self, pump: StdinPump, decode: Callable[[bytes], Any], stall_s: float = STALL_S
    ) -> None:
        self._pump = pump
        self._decode = decode
        self._stall_s = stall_s
        self._buf = bytearray()
        self._eof = False

    async def _fill(self, timeout: float | None) -> bool:
        """Append the next chunk; False at end of input or when none came in ``timeout``."""
        if self._eof:
            return False
        chunk = await self._pump.get(timeout)
        if chunk is None:
            return False
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    async def next(self) -> Frame | None:
        """The next frame, or None at end of input."""
        while True:
            stripped = len(self._buf) - len(self._buf.lstrip())
            del self._buf[:stripped]
            if self._buf:
                break
            if not await self._fill(None):
                return None
        if self._buf[:1] in (b"{", b"["):
            return await self._recover("a message without a Content-Length header")
        headers: dict[bytes, bytes] = {}
        while True:
            end = self._buf.find(b"\n")
            if end < 0:
                if len(self._buf) > MAX_HEADER_LINE:
                    return await self._recover("a header line longer than 64 KiB")
                if not await self._fill(self._stall_s):
                    return None if self._eof else await self._recover("an unfinished header")
                continue
            line = bytes(self._buf[:end]).rstrip(b"\r")
            if not line:  # the blank line that ends the headers
                del self._buf[: end + 1]
                break
            name, colon, value = line.partition(b":")
            if not colon or not _HEADER_NAME.fullmatch(name.strip()):
                return await self._recover(f"{line[:60]!r} where a header was expected")
            del self._buf[: end + 1]
            headers[name.strip().lower()] = value.strip()
        raw_length = headers.get(b"content-length")
        if raw_length is None:
            return await self._recover("a header block without Content-Length")
        if not raw_length.isdigit():
            return await self._recover(f"Content-Length {raw_length[:40]!r} is not a number")
        length = int(raw_length)
        while len(self._buf) < length:
            if not await self._fill(self._stall_s):
                return await self._recover(
                    f"Content-Length {length} but only {len(self._buf)} bytes arrived"
                )
        body = bytes(self._buf[:length])
        try:
            message = self._decode(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return await self._recover(f"Content-Length {length} does not frame one JSON message")
        except Exception:
            del self._buf[:length]
            raise
        del self._buf[:length]
        if not self._buf:
            self._buf = bytearray()  # do not keep a large message's capacity
        return Frame(message=message)

    async def _recover(self, problem: str) -> Frame:
        """Take everything up to the next ``Content-Length:`` as the broken frame's message."""
        while True:
            found = _NEXT_HEADER.search(self._buf, 1)
            if found is not None:
                cut = found.start()
                break
            if _is_json(self._buf) or not await self._fill(self._stall_s):
                cut = len(self._buf)
                break
        junk = bytes(self._buf[:cut])
        del self._buf[:cut]
        try:
            message = self._decode(junk.strip())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return Frame(problem=problem, junk=junk)
        return Frame(message=message, problem=problem, junk=junk)


def _is_json(data: bytearray) -> bool:
    text = bytes(data).strip()
    if not text.endswith((b"}", b"]")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def request_id(junk: bytes) -> int | str | None:
    """The id of a request in unparseable bytes, if there is exactly one candidate."""
    if b'"method"' not in junk:
        return None
    ids = _REQUEST_ID.findall(junk)
    if len(ids) != 1:
        return None
    try:
        value = json.loads(ids[0])
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


async def serve(stop_event: threading.Event, stream: BinaryIO, protocol: Any) -> None:
    """pygls' ``run_async`` loop, with ``FrameReader`` in place of its reader."""
    frames = FrameReader(
        StdinPump(stream), lambda body: json.loads(body, object_hook=protocol.structure_message)
    )
    while not stop_event.is_set():
        try:
            frame = await frames.next()
        except Exception:
            log.exception("could not read a message")
            continue
        if frame is None:
            return
        if frame.problem is not None:
            recovered = "handled it" if frame.message is not None else "skipped it"
            log.warning(
                "malformed LSP frame: %s; %s (%d bytes) and resynchronised",
                frame.problem,
                recovered,
                len(frame.junk),
            )
            if frame.message is None:
                msg_id = request_id(frame.junk)
                if msg_id is not None:
                    protocol.reject_unreadable(msg_id, frame.problem)
                continue
        try:
            protocol.handle_message(frame.message)
        except Exception:
            log.exception("could not handle a message")


def start_stdio(server: Any, stdin: BinaryIO | None, stdout: BinaryIO | None) -> None:
    """pygls' ``_start_io_async``, serving through ``serve``."""
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    try:
        asyncio.run(serve(server._stop_event, stdin or sys.stdin.buffer, server.protocol))
    except BrokenPipeError:
        log.error("the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
