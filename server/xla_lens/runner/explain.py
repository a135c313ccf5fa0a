"""The explain window: what the runner asks torch_xla to dump, and reading it back.

For the first ``explain_steps`` steps, or until ``explain_graphs`` graphs were compiled, the
child runs with ``XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1`` (each IR node records the Python line that
made it) and ``XLA_SAVE_TENSORS_FILE`` (each synced graph is written out, as HLO). The bootstrap
then closes the window (``_close_explain_window``): torch_xla reads that variable once per
thread (a ``thread_local`` in ``DebugUtil::SaveTensorsGraphInfo``), so afterwards it still
lowers every synced graph to HLO, after waiting for the previous execution, into /dev/null.
That residual cost, which the window does not bound, is what ``bench/runner_overhead.py``
measures (README). A recompilation after the window stays unexplained (the old "likely cause"
message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from .events import Compile, Execute
from .frames import UserCode
from .graph_diff import CompileSite, Explanation, Graph, explain, parse_dump

GRAPHS_FILE = "graphs.hlo"
DEFAULT_STEPS = 30
DEFAULT_GRAPHS = 12
# The window bounds the dump; this bounds what is read back even if a file keeps growing.
MAX_READ_BYTES = 32 << 20


def dump_env(folder: Path, steps: int, graphs: int, env: Mapping[str, str]) -> dict[str, str]:
    """The child's environment additions for the window; none when it is off (``steps`` 0) or
    the user already dumps graphs themselves (their file is theirs: left alone)."""
    if steps <= 0 or env.get("XLA_SAVE_TENSORS_FILE"):
        return {}
    path = str(folder / GRAPHS_FILE)
    return {
        "XLA_IR_DEBUG": "1",
        "XLA_HLO_DEBUG": "1",
        "XLA_SAVE_TENSORS_FILE": path,
        "XLA_SAVE_TENSORS_FMT": "hlo",
        "XLA_LENS_GRAPHS_FILE": path,
        "XLA_LENS_EXPLAIN_STEPS": str(steps),
        "XLA_LENS_EXPLAIN_GRAPHS": str(max(1, graphs)),
    }


def read_graphs(folder: Path) -> list[Graph]:
    """The graphs dumped into ``folder``, per device ordinal: those of the closed window
    (``<file>.N.window``), then any written before it closed (``<file>.N``, unless it already
    links to /dev/null)."""
    parts: list[tuple[int, bool, Path]] = []
    for path in folder.glob(GRAPHS_FILE + ".*"):
        ordinal, _, tail = path.name[len(GRAPHS_FILE) + 1 :].partition(".")
        if ordinal.isdigit() and tail in ("", "window") and not path.is_symlink():
            parts.append((int(ordinal), tail == "", path))
    graphs: list[Graph] = []
    budget = MAX_READ_BYTES
    for _, _, path in sorted(parts):
        if budget <= 0:
            break
        with open(path, "rb") as fh:
            data = fh.read(budget)
        budget -= len(data)
        graphs.extend(parse_dump(data.decode(errors="replace")))
    return graphs


def explain_compiles(
    events: Sequence[Compile | Execute], graphs: Sequence[Graph], user: UserCode
) -> list[Explanation]:
    sites = [
        CompileSite(e.graph_hash, e.file, e.line, e.step) for e in events if isinstance(e, Compile)
    ]
    return explain(sites, graphs, user.is_user)
