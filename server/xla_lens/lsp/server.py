"""Wiring: build the server from its feature modules and run it over stdio."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Sequence

from ..runner.lifeline import install_owner_signal_handlers
from . import actions, commands, documents, hover, memory, run_command
from .core import XlaLensServer

Register = Callable[[XlaLensServer], None]

# Each feature module attaches its handlers in ``register(ls)``. A new feature (run on
# device, inlay hints, code lens) is a new module added here, or passed as ``extra``.
FEATURES: tuple[Register, ...] = (
    documents.register,
    actions.register,
    commands.register,
    hover.register,
    run_command.register,
)


def build_server(extra: Iterable[Register] = ()) -> XlaLensServer:
    ls = XlaLensServer()
    for register in (*FEATURES, *extra):
        register(ls)
    return ls


def main(argv: Sequence[str] | None = None) -> int:
    """Serve LSP over stdio until the client says exit."""
    # JSON-RPC owns the real stdout; any stray print (ours or a library's) goes to stderr.
    transport_out = sys.stdout.buffer
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="xla-lens: %(message)s")
    memory.tune_allocator()
    ls = build_server()
    # SIGTERM/SIGHUP end the running scripts first (SIGKILL: their lifeline does it).
    install_owner_signal_handlers()
    ls.start_io(stdin=sys.stdin.buffer, stdout=transport_out)
    return 0
