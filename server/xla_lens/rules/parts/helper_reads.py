"""XLA401's reads in the helpers a training loop calls every step.

``grad_norm = clip_grad_value_(model.parameters(), None)`` in the loop runs the helper's
``param_norm.item()`` once per parameter, every step: each is a sync, as if written in the
loop. ``loop_nodes`` only covers the loop and the step functions it calls; this follows the
other calls of those nodes into functions of this script (two levels deep) and into
functions of sibling modules (``from commons import clip_grad_value_``, one level, plus
that module's own helpers), and asks the rule's own read test of their bodies.

Not followed: calls under a periodic ``if step % n == 0:`` (not every step), step and epoch
functions (the loop covers the first, the second loops on its own), step-closure functions,
and calls whose every argument is a host value (``show(3.0)``: the helper reads a number).
Each helper's reads are worked out once per parse, however many loops call it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...semantic.calls import FunctionNode
from ...semantic.host_values import HostValues, host_values
from ...semantic.model import ScriptModel, TrainingLoop
from ...semantic.tensors import loop_nodes
from ...semantic.workspace_calls import helper_target, parsed_module

# What the rule counts as a read: (model, its host values, node) -> kind, or None.
ReadTest = Callable[[ScriptModel, HostValues, ast.AST], "str | None"]
MAX_DEPTH = 2
IN_LOOP = "inside the training loop"
HELPER_MANUAL = (
    "Keep the value on the device inside the helper and return it as a tensor; read it once, "
    "after the step, in `xm.add_step_closure(fn, args=(value,))` or only every few steps (for "
    "per-parameter norms: `torch.stack([...])` reduced on the device, or "
    "`torch.nn.utils.clip_grad_norm_`, which returns the total norm as a tensor)."
)


@dataclass(frozen=True)
class HelperRead:
    loop: TrainingLoop
    call: ast.Call  # the call in the training loop
    chain: tuple[str, ...]  # helpers from the one the loop calls to the one that reads
    node: ast.AST  # the read (in this file; in the sibling's file for ``where``)
    what: str
    where: str | None = None  # ``commons.py:12`` when the helper is a sibling module's


def helper_reads(
    model: ScriptModel,
    reads: ReadTest,
    every_step: Callable[[TrainingLoop, ast.AST], bool],
    skipped: Callable[[FunctionNode], bool],
) -> Iterator[HelperRead]:
    """Reads in helpers the training loops call every step: each read of this file once
    (the first loop and call that reach it); a sibling's reads once per call."""
    values = host_values(model)
    steps = model.steps
    seen: set[int] = set()
    for loop, node in loop_nodes(model):
        if not isinstance(node, ast.Call) or _host_arguments(values, node):
            continue
        fn = steps.callee(node)
        if fn is None:
            sibling = _sibling_reads(model, node, reads)
            if sibling and every_step(loop, node):
                path, chain, read, what = sibling
                where = f"{Path(path).name}:{read.lineno}"  # type: ignore[attr-defined]
                yield HelperRead(loop, node, chain, read, what, where)
            continue
        if _not_a_helper(model, fn) or skipped(fn):
            continue
        found = _reads_in(model, fn, reads, skipped, MAX_DEPTH)
        if not found or not every_step(loop, node):
            continue
        for chain, read, what in found:
            if id(read) not in seen:
                seen.add(id(read))
                yield HelperRead(loop, node, chain, read, what)


def helper_message(read: HelperRead, message: str) -> str:
    """The rule's ``message`` for a read in the loop, said of the helper that makes it."""
    loop_line = read.loop.node.lineno
    through = ""
    if len(read.chain) > 1:
        through = ", through " + ", ".join(f"`{name}`" for name in read.chain[:-1])
    if read.where is not None:
        shown = ast.unparse(read.call.func)
        head = f"`{shown}(...)` runs {read.where} in `{read.chain[-1]}`, where "
        where = f"every step, from the training loop on line {loop_line}"
        return head + message.replace(IN_LOOP, where)
    where = (
        f"in `{read.chain[-1]}`, which the training loop on line {loop_line} calls every step "
        f"(line {read.call.lineno}{through})"
    )
    return message.replace(IN_LOOP, where)


def _host_arguments(values: HostValues, call: ast.Call) -> bool:
    """Every argument is a host value: the helper is handed numbers, not tensors."""
    args = [*call.args, *(k.value for k in call.keywords)]
    return bool(args) and all(not isinstance(a, ast.Starred) and values.is_host(a) for a in args)


def _not_a_helper(model: ScriptModel, fn: FunctionNode) -> bool:
    steps = model.steps
    return fn in steps.step_functions or fn in steps.epoch_functions


def _reads_in(
    model: ScriptModel,
    fn: FunctionNode,
    reads: ReadTest,
    skipped: Callable[[FunctionNode], bool],
    depth: int,
) -> tuple[tuple[tuple[str, ...], ast.AST, str], ...]:
    """``(chain, read, kind)`` of the reads ``fn`` makes, itself or in the helpers it calls
    (``depth`` levels in all), worked out once per function and depth."""

    def compute() -> tuple[tuple[tuple[str, ...], ast.AST, str], ...]:
        values = host_values(model)
        out: list[tuple[tuple[str, ...], ast.AST, str]] = []
        for node in model.walk_scope(fn):
            what = reads(model, values, node)
            if what is not None:
                out.append(((fn.name,), node, what))
            elif depth > 1 and isinstance(node, ast.Call) and not _host_arguments(values, node):
                inner = model.steps.callee(node)
                if inner is None or inner is fn or _not_a_helper(model, inner) or skipped(inner):
                    continue
                for chain, read, kind in _reads_in(model, inner, reads, skipped, depth - 1):
                    out.append(((fn.name, *chain), read, kind))
        return tuple(out)

    return model.memo((_reads_in, fn, depth), compute)


# Sibling modules, each parsed into a model once (keyed by the parsed module it came from).
_sibling_models: dict[int, tuple[object, ScriptModel]] = {}


def _sibling_reads(
    model: ScriptModel, call: ast.Call, reads: ReadTest
) -> tuple[str, tuple[str, ...], ast.AST, str] | None:
    """``(file, helpers down to the reading one, first read, kind)`` for a call of a sibling module's function
    that reads a tensor on the host, or None."""
    target = helper_target(model, call)
    if target is None:
        return None
    parsed = parsed_module(target.path)
    if parsed is None or target.function not in parsed.functions:
        return None
    cached = _sibling_models.get(id(parsed))
    if cached is None or cached[0] is not parsed:
        if len(_sibling_models) >= 32:
            _sibling_models.clear()
        # "<sibling>": its own imports are not followed further.
        cached = (parsed, ScriptModel(parsed.source, parsed.tree, "<sibling>"))
        _sibling_models[id(parsed)] = cached
    sibling = cached[1]
    fn = parsed.functions[target.function]
    if _not_a_helper(sibling, fn):
        return None
    found = _reads_in(sibling, fn, reads, lambda _fn: False, MAX_DEPTH)
    if not found:
        return None
    chain, read, what = found[0]
    return str(target.path), chain, read, what
