"""The events a run reports, in the order a consumer sees them.

Every event is a dataclass with a ``type`` and ``to_json()`` (one JSON object; ``--json`` prints
one per line). A run emits, in order:

- ``started``: the argv, cwd and pid of the child (never for a refused run).
- ``device``: which PJRT device the run uses and, in plain words, why (``reason``).
- ``output``: one line of the script's stdout or stderr (``stream``), as it arrives.
- ``compile`` / ``execute``: one XLA compilation (a new graph) or execution, with its cause,
  graph hash, the user-script frame that triggered it (``file``/``line``) and the step it
  belongs to; ``seconds`` comes from the CompileTime/ExecuteTime metric samples.
  Both are emitted at the end of their step, when their durations are known.
- ``step``: one completed ``torch_xla.sync``/``mark_step`` with the metric deltas of that step.
- ``profiler``: a ``pt-xla-profiler:`` advice line from torch_xla.
- ``exception``: the script raised; ``file``/``line`` is the innermost frame in user code.
- ``problem``: a named problem (``kind`` in ``Problem.KINDS``) at a source line; an explained
  ``recompilation`` sits at its cause line and names the trigger line (``trigger_*``).
- ``refused``: the script was not started (syntax error, impossible device, ...).
- ``exit``: how the child ended (``status``: ok, failed, signal, cancelled, timeout,
  step-limit).
- ``summary``: the whole ``RunSummary``, always last.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass
class Event:
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **dataclasses.asdict(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))


@dataclass
class Started(Event):
    type: ClassVar[str] = "started"
    argv: list[str]
    cwd: str
    pid: int
    script: str


@dataclass
class DeviceChosen(Event):
    type: ClassVar[str] = "device"
    device: str  # the PJRT_DEVICE value used: CPU, TPU, NEURON, CUDA
    requested: str  # auto or the explicit request
    reason: str
    torch_xla_version: str | None
    gpu_visible: bool
    gpu_names: list[str] = field(default_factory=list)


@dataclass
class Output(Event):
    type: ClassVar[str] = "output"
    stream: str  # "stdout" | "stderr"
    text: str
    truncated: bool = False


@dataclass
class Frame:
    function: str
    file: str
    line: int


@dataclass
class GraphEvent(Event):
    cause: str
    graph_hash: str
    inputs: int | None
    outputs: int | None
    file: str | None  # the user-script frame that triggered it
    line: int | None
    function: str | None
    step: int  # 1-based step this happened in (the sync that ends it is step ``step``)
    seconds: float | None
    frames: list[Frame] = field(default_factory=list)


@dataclass
class Compile(GraphEvent):
    type: ClassVar[str] = "compile"


@dataclass
class Execute(GraphEvent):
    type: ClassVar[str] = "execute"


@dataclass
class Step(Event):
    type: ClassVar[str] = "step"
    step: int
    wall_s: float
    uncached_compiles: int
    cached_compiles: int
    compile_s: float
    execute_s: float
    transfer_from_device_s: float
    transfer_from_device_count: int
    fallbacks: dict[str, int] = field(default_factory=dict)  # aten::op -> calls this step
    pid: int = 0


@dataclass
class Profiler(Event):
    type: ClassVar[str] = "profiler"
    text: str


@dataclass
class ExceptionRaised(Event):
    type: ClassVar[str] = "exception"
    exc_type: str
    message: str
    file: str | None
    line: int | None
    traceback: list[Frame] = field(default_factory=list)


@dataclass
class Problem(Event):
    type: ClassVar[str] = "problem"
    KINDS: ClassVar[tuple[str, ...]] = (
        "recompilation",
        "host-read",
        "cpu-fallback",
        "compile-bound",
        "crash",
        "hang",
        "no-xla",  # the run ended without any XLA work: the script is not converted
    )
    kind: str
    file: str | None
    line: int | None
    message: str
    # A recompilation explained from the graphs themselves (graph_diff.py): file/line above are
    # the cause line (== cause_file/cause_line), trigger_* the sync or host read that compiled.
    cause_file: str | None = None
    cause_line: int | None = None
    change_kind: str | None = None  # "shape" | "constant" | "branch"
    changed: str | None = None  # "f32[8,12] → f32[7,12]", "slice [0:8] → [2:10]", ...
    hint: str | None = None
    doc_url: str | None = None
    trigger_file: str | None = None
    trigger_line: int | None = None


@dataclass
class Refused(Event):
    type: ClassVar[str] = "refused"
    message: str
    file: str | None = None
    line: int | None = None


@dataclass
class Exited(Event):
    type: ClassVar[str] = "exit"
    status: str  # ok | failed | signal | cancelled | timeout | step-limit
    returncode: int | None
    signal: str | None
    duration_s: float
    leftover_killed: int = 0  # processes of the script's group still alive after it ended


@dataclass
class Summary(Event):
    type: ClassVar[str] = "summary"
    summary: dict[str, Any]
