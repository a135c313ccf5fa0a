"""Wiring: build the server from its feature modules and run it over stdio."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Sequence

from ..rules.registry import all_rules
from ..runner.lifeline import install_owner_signal_handlers
from . import actions, commands, documents, hover, memory, run_command
from .core import XlaLensServer

Register = Callable[[XlaLensServer], None]
SWITCH_INTERVAL_S = 0.0001

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


def _load_rules() -> None:
    """Import the rules now rather than inside the first analysis: it costs the same, but
    done with the collector off and before ``tune_collector``, their tables are frozen with
    the server's own code, so no young collection walks them. A rule that fails to import
    is reported by the analyses."""
    try:
        all_rules()
    except Exception:  # noqa: BLE001 - the first analysis reports it to the client
        logging.getLogger("xla_lens.lsp").debug("loading the rules failed", exc_info=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve LSP over stdio until the client says exit."""
    # JSON-RPC owns the real stdout; any stray print (ours or a library's) goes to stderr.
    transport_out = sys.stdout.buffer
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="xla-lens: %(message)s")
    memory.tune_allocator()
    # The analysis runs on a worker thread while the event loop answers hover and code
    # actions from the last analysis: each time the loop wakes (a message read, a reply
    # written) it waits for the GIL up to the switch interval, 5 ms by default, so a
    # hover during an analysis took 12-40 ms; at 0.5 ms, 12-14 ms p95 (2,000 lines); at
    # 0.1 ms, 7-10 ms (bench/lsp_latency.py, same machine, back to back). The interval only
    # matters while the loop waits for the GIL: the analysis runs no slower for it.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    ls = build_server()
    _load_rules()
    memory.tune_collector()
    # SIGTERM/SIGHUP end the running scripts first (SIGKILL: their lifeline does it).
    install_owner_signal_handlers()
    ls.start_io(stdin=sys.stdin.buffer, stdout=transport_out)
    return 0
