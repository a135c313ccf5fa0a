"""XLA402: shapes that change from step to step (a smaller last batch, data-dependent ops)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from ..semantic.arguments import local_bindings
from ..semantic.infinite_samplers import is_infinite_sampler
from ..semantic.kwargs_dicts import provably_lacks
from ..semantic.model import ScriptModel, keyword, method_name
from ..semantic.sibling_loops import (
    returned_elements,
    returned_to_training_loops,
    sibling_loop_arguments,
)
from ..semantic.tensors import loop_nodes
from .base import Category, Finding, Fix, Rule, RuleContext, SetKeyword, Severity
from .parts.device_chunks import device_resident_source
from .parts.discarded_batches import batch_discarded
from .parts.drained_loaders import drained_loaders
from .parts.dynamic_ops import MASK_ASSIGNMENT, dynamic_op
from .parts.eval_loader_batches import eval_loader_findings, single_sample_batches
from .parts.even_batches import batches_divide_evenly
from .parts.forward_buffer_reads import SLICE_MANUAL, forward_buffer_reads, slice_message
from .parts.graph_batches import graph_batch_findings
from .parts.growing_sequences import growing_sequence_findings
from .parts.host_side_ops import on_host_here
from .parts.loop_helpers import loop_helpers
from .parts.pointer_writes import pointer_write_findings
from .parts.random_branches import random_branch_findings
from .parts.random_lengths import random_length_findings
from .parts.random_offsets import random_offset_findings, sibling_offset_findings
from .parts.stepped_chunks import stepped_chunk
from .parts.workspace_forward_ops import workspace_forward_ops

CODE = "XLA402"
# Keys a ``**kwargs`` dict must provably lack for drop_last=True to be added beside it.
LOADER_KEYS = frozenset({"drop_last", "batch_sampler", "batch_size"})
DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
REVIEW_DROP_LAST = (
    "each epoch then skips the samples of the short last batch (up to batch_size - 1), so "
    "training sees different data; keep it when the dataset size is a multiple of the batch "
    "size, or pad the last batch instead"
)
MANUAL_CHUNKS = (
    "Keep every chunk the same length: stop the loop before the short tail (e.g. "
    "`range(0, n - bptt, bptt)`, which drops the last few tokens), or pad the last chunk to "
    "the full length and leave the padded positions out of the loss."
)
DRAINED_MESSAGE = (
    "this DataLoader's batches reach the training step through next() and it keeps a smaller "
    "last batch: whenever its iterator reaches the end, the step gets a new shape and XLA "
    "compiles another graph for it; set drop_last=True (review: it drops the short batch)"
)
MANUAL_OPS = (
    "Keep shapes fixed: use `torch.where(mask, x, 0)` or multiply by the mask instead of "
    "selecting elements, reduce with the mask (`(x * mask).sum() / mask.sum()`), or pad the "
    "result to a fixed size the graph can keep."
)


def _loader_calls(model: ScriptModel, expr: ast.AST, depth: int = 0) -> Iterator[ast.Call]:
    """The ``DataLoader(...)`` calls that feed ``expr``, through names and wrappers
    (``enumerate``, ``tqdm``, ``pl.MpDeviceLoader``, ``.per_device_loader``)."""
    for calls in _loader_call_lists(model, expr, depth):
        yield from calls


def _loader_call_lists(
    model: ScriptModel, expr: ast.AST, depth: int = 0
) -> Iterator[Sequence[ast.Call]]:
    """``_loader_calls`` in runs: a name's run is one list per name and depth, shared by
    every loop that reaches it (so a caller can take each such list once)."""
    if depth > 6:
        return
    if isinstance(expr, ast.Name):
        # A name the function around it binds is that binding, not every binding of the name
        # in the script (held-out 54: ``para_loader`` is a ParallelLoader of the training
        # loader in one function and of the test loader in another).
        scope = model.enclosing_function(expr)
        local = (
            [v for v in model.assigned_from(expr.id) if model.enclosing_function(v) is scope]
            if scope is not None
            else []
        )
        if local:
            yield [call for value in local for call in _loader_calls(model, value, depth + 1)]
        else:
            yield _name_loader_calls(model, expr.id, depth)
    elif isinstance(expr, ast.Call):
        if model.call_name(expr) in DATALOADERS:
            yield (expr,)
        elif method_name(expr) == "per_device_loader" and isinstance(expr.func, ast.Attribute):
            yield from _loader_call_lists(model, expr.func.value, depth + 1)
        elif isinstance(expr.func, ast.Name) and isinstance(
            fn := model.functions.get(expr.func.id), ast.FunctionDef
        ):
            # ``dataloader = _create_data_loader(...)``: what the script's function returns.
            for ret in ast.walk(fn):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    yield from _loader_call_lists(model, ret.value, depth + 1)
        elif expr.args:
            yield from _loader_call_lists(model, expr.args[0], depth + 1)


def _name_loader_calls(model: ScriptModel, name: str, depth: int) -> list[ast.Call]:
    """``_loader_calls`` of every value assigned to ``name`` (once per name, depth and parse:
    each loop over ``loader`` followed every ``loader = ...`` of a big script again)."""
    cache: dict[tuple[str, int], list[ast.Call]] = model.memo(_name_loader_calls, dict)
    key = (name, depth)
    found = cache.get(key)
    if found is None:
        found = cache[key] = [
            call
            for value in model.assigned_from(name)
            for call in _loader_calls(model, value, depth + 1)
        ]
    return found


def _training_loaders(model: ScriptModel) -> list[ast.Call]:
    seen: dict[int, ast.Call] = {}
    taken: set[int] = set()  # ids of the shared per-name lists already taken in full
    for loop in model.training_loops:
        if isinstance(loop.node, ast.For | ast.AsyncFor) and not batch_discarded(loop.node):
            for calls in _loader_call_lists(model, loop.node.iter):
                if isinstance(calls, list):
                    if id(calls) in taken:
                        continue  # every loop over ``loader`` reaches the same calls
                    taken.add(id(calls))
                for call in calls:
                    seen.setdefault(id(call), call)
    for call in drained_loaders(model):  # advanced with next() each step
        seen.setdefault(id(call), call)
    for arg in sibling_loop_arguments(model):  # the training loop is in a sibling module
        for call in _loader_calls(model, arg):
            seen.setdefault(id(call), call)
    if any(c for c in model.calls if model.call_name(c) in DATALOADERS):
        for fn, elements in returned_to_training_loops(model):  # ... iterates what this returns
            for ret in ast.walk(fn):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    for value in returned_elements(ret.value, elements):
                        for call in _loader_calls(model, value):
                            seen.setdefault(id(call), call)
    return sorted(seen.values(), key=lambda c: (c.lineno, c.col_offset))


def _drop_last_findings(model: ScriptModel) -> Iterator[Finding]:
    drained = {id(c) for c in drained_loaders(model)}
    for call in _training_loaders(model):
        kw = keyword(call, "drop_last")
        if kw is not None and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
            continue  # already True, or computed by the script
        if keyword(call, "batch_sampler") is not None or not all(
            k.arg is not None
            or (isinstance(k.value, ast.Name) and provably_lacks(model, k.value, LOADER_KEYS))
            for k in call.keywords
        ):
            continue  # drop_last conflicts with batch_sampler; **kwargs may carry either
        batch_size = keyword(call, "batch_size")
        if (
            batch_size is not None
            and isinstance(batch_size.value, ast.Constant)
            and batch_size.value.value is None
        ) or single_sample_batches(call):
            continue
        if batches_divide_evenly(model, call):
            continue
        sampler = keyword(call, "sampler")
        if sampler is not None and is_infinite_sampler(model, sampler.value):
            continue  # it never ends: there is no last batch
        yield Finding(
            CODE,
            DRAINED_MESSAGE
            if id(call) in drained
            else "the training DataLoader keeps a smaller last batch: its new shape makes XLA "
            "compile a second graph of the step (once: later epochs take it from the cache); "
            "set drop_last=True (review: it drops the short batch)",
            model.span(kw.value if kw is not None else call),
            Severity.WARNING,
            fix=Fix(
                "Set drop_last=True",
                (SetKeyword(model.span(call), "drop_last", "True"),),
                safe=False,
                review_reason=REVIEW_DROP_LAST,
            ),
        )


def _loop_and_helper_nodes(model: ScriptModel) -> Iterator[ast.AST]:
    """Nodes each training iteration runs: the loop's own frame, its step functions, and
    the script's functions it calls directly (``data, targets = get_batch(source, i)``)."""
    helpers: dict[int, ast.AST] = {}
    # The loop's own iterable too: ``for batch in batches(data, 8):`` runs the generator's
    # chunking every epoch (the e2e sample odd_batch.py).
    iterables = [
        n
        for t in model.training_loops
        if isinstance(t.node, ast.For)
        for n in ast.walk(t.node.iter)
    ]
    for node in [*(n for _loop, n in loop_nodes(model)), *iterables]:
        yield node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fn = model.functions.get(node.func.id)
            if fn is not None and model.qualname(node.func) is None:
                helpers.setdefault(id(fn), fn)
    for fn in helpers.values():
        yield from model.walk_scope(fn)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _bounding_min(model: ScriptModel, upper: ast.expr, start: set[str]) -> ast.Call | None:
    """The ``min(...)`` that caps a slice's end by what is left of the data: in
    ``src[i:i + seq_len]`` with ``seq_len = min(bptt, len(src) - 1 - i)``, or directly
    ``src[i:min(i + bs, n)]``. One of its arguments moves with the chunk start."""
    parts: list[ast.expr] = [upper]
    if isinstance(upper, ast.BinOp) and isinstance(upper.op, ast.Add):
        parts += [upper.left, upper.right]
    for part in list(parts):
        if isinstance(part, ast.Name):
            binds = local_bindings(model, part.id, part)
            if len(binds) == 1 and binds[0].value is not None:
                parts.append(binds[0].value)
    for part in parts:
        if (
            isinstance(part, ast.Call)
            and isinstance(part.func, ast.Name)
            and part.func.id == "min"
            and model.qualname(part.func) is None
            and len(part.args) >= 2
            and any(_names(a) & start for a in part.args)
        ):
            return part
    return None


def _short_last_chunks(model: ScriptModel) -> Iterator[Finding]:
    seen: set[int] = set()
    slices = sorted(
        (
            n
            for n in _loop_and_helper_nodes(model)
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
        ),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for node in slices:
        chunk = node.slice
        if not (isinstance(chunk, ast.Slice) and chunk.lower and chunk.upper) or chunk.step:
            continue
        start = _names(chunk.lower)
        placed = device_resident_source(model, node) if start else None
        if placed is not None and id(node) not in seen:
            seen.add(id(node))
            yield _device_chunk_finding(model, node, placed)
            continue
        cap = _bounding_min(model, chunk.upper, start) if start else None
        if cap is None:
            loop = stepped_chunk(model, node)
            if loop is not None and id(loop) not in seen:
                seen.add(id(loop))
                yield Finding(
                    CODE,
                    f"`{model.segment(node)}` takes chunks stepping through "
                    f"`{model.segment(loop.iter)}` (line {loop.lineno}): the slice stops at the "
                    "end of the data, so the last chunk is shorter whenever the data length is "
                    "not a multiple of the step, a new shape that makes XLA compile a second "
                    "graph of the step (once, then it is taken from the cache)",
                    model.span(node),
                    Severity.WARNING,
                    manual=MANUAL_CHUNKS,
                )
            continue
        if id(cap) in seen:
            continue
        seen.add(id(cap))
        yield Finding(
            CODE,
            f"`{model.segment(node)}` takes a chunk capped by `{model.segment(cap)}` (line "
            f"{cap.lineno}): the last chunk is shorter whenever the data length is not a "
            "multiple of the chunk size, a new shape that makes XLA compile a second graph of "
            "the step (once, then it is taken from the cache)",
            model.span(node),
            Severity.WARNING,
            manual=MANUAL_CHUNKS,
        )


def _device_chunk_finding(model: ScriptModel, node: ast.Subscript, placed: ast.AST) -> Finding:
    shown = model.segment(node)[:60]
    moved = model.segment(placed)[:60]
    line = placed.lineno  # type: ignore[attr-defined]
    return Finding(
        CODE,
        f"`{shown}` slices a tensor already on the device (`{moved}`, line {line}) at an "
        "offset that changes every step: a Python int in a slice is a constant of the traced "
        "graph, so XLA compiles a new graph for every offset (and the short last chunk is one "
        "more)",
        model.span(node),
        Severity.WARNING,
        manual=(
            f"Keep the data on the CPU (leave out `{moved}` at line {line}) and move each chunk "
            f"as it is taken (`{shown}.to(device)`): every chunk is then an upload of the same "
            "shape, one graph. Stop before a short last chunk (or pad it) to keep it one graph."
        ),
    )


def _op_finding(model: ScriptModel, node: ast.AST, what: str, where: str) -> Finding:
    if what == MASK_ASSIGNMENT:
        return Finding(
            CODE,
            f"`{model.segment(node)[:50]} = ...` assigns through a boolean mask{where}: XLA "
            "turns the mask into indices first (aten::nonzero, whose size depends on the "
            "data), so it compiles again whenever that count changes (or falls back to the CPU)",
            model.span(node),
            Severity.WARNING,
            manual="Write it as `x.masked_fill_(mask, value)` (or `x = torch.where(mask, value, "
            "x)`): the same values, one graph whatever the mask holds.",
        )
    return Finding(
        CODE,
        f"{what} has a data-dependent output shape{where}: XLA cannot know its size before "
        "running the graph, so it compiles again whenever the size changes (and may fall back "
        "to the CPU)",
        model.span(node),
        Severity.WARNING,
        manual=MANUAL_OPS,
    )


def _helper_op_findings(model: ScriptModel, done: set[int]) -> Iterator[Finding]:
    """Data-dependent ops in the script's functions the loop runs (held-out 8 H10)."""
    for helper in loop_helpers(model):
        name = getattr(helper.fn, "name", "?")
        entry = model.segment(helper.entry.func)
        if helper.feeds_loop:
            where = (
                f" in `{name}`, which the training loop draws its batches from through "
                f"`{entry}(...)` (its set-up runs again each epoch)"
            )
        else:
            where = f" in `{name}`, which the training step runs through `{entry}(...)`"
        for node in model.walk_scope(helper.fn):
            what = dynamic_op(model, node)
            if (
                what is not None
                and id(node) not in done
                and not on_host_here(model, helper.fn, node)
            ):
                done.add(id(node))
                yield _op_finding(model, node, what, where)


def _iteration_nodes(model: ScriptModel) -> Iterator[tuple[ast.AST, str]]:
    """Every node a training iteration runs, with where (as a finding says it)."""
    for _loop, node in loop_nodes(model):
        yield node, " inside the training loop"
    for helper in loop_helpers(model):
        where = f" in `{getattr(helper.fn, 'name', '?')}`, which the training loop runs"
        for node in model.walk_scope(helper.fn):
            yield node, where


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _drop_last_findings(model)
    yield from eval_loader_findings(model, _training_loaders(model))
    yield from _short_last_chunks(model)
    yield from random_offset_findings(model, CODE, _iteration_nodes(model), set())
    yield from random_branch_findings(model, CODE, _iteration_nodes(model))
    yield from random_length_findings(model, CODE)
    yield from sibling_offset_findings(model, CODE)
    yield from growing_sequence_findings(model, CODE)
    yield from pointer_write_findings(model, CODE)
    yield from graph_batch_findings(model, CODE)
    done: set[int] = set()
    for _loop, node in loop_nodes(model):
        what = dynamic_op(model, node)
        if what is None or id(node) in done:
            continue
        done.add(id(node))
        yield _op_finding(model, node, what, " inside the training loop")
    yield from _helper_op_findings(model, done)
    for found in workspace_forward_ops(model, dynamic_op):
        ops = "; ".join(f"line {n}: {w}" for n, w in found.ops[:4])
        yield Finding(
            CODE,
            f"`{model.segment(found.call.func)}(...)` runs `{found.class_name}.{found.method}` of "
            f"{found.path.name} every training step, whose output shapes depend on the data "
            f"({ops}): XLA cannot know their sizes before running the graph, so it compiles "
            "again whenever they change (and may fall back to the CPU)",
            model.span(found.call),
            Severity.WARNING,
            manual=f"In {found.path}: {MANUAL_OPS} A boolean-mask assignment "
            "(`x[mask] = v`) becomes `x.masked_fill_(mask, v)`.",
        )
    for read in forward_buffer_reads(model):
        for store in read.slices:
            yield Finding(
                CODE,
                slice_message(model, read),
                model.span(store),
                Severity.WARNING,
                manual=SLICE_MANUAL,
            )


HOVER_LOADER = """\
**XLA402 · `DataLoader(drop_last=True)`**

XLA compiles one graph per input shape. A last batch smaller than `batch_size` is a new shape,
so a second graph of the step is compiled (once; later epochs take it from the cache).
`drop_last=True` keeps every training batch the same size. Same on the legacy and modern targets.
"""

HOVER_OPS = """\
**XLA402 · data-dependent shapes**

`nonzero`, `masked_select`, `unique`, one-argument `torch.where` and boolean-mask indexing
`t[mask]` return as many elements as the data holds, so their shape changes per step and XLA
recompiles (or runs them on the CPU). Keep shapes static: `torch.where(mask, x, 0)`,
`(x * mask).sum() / mask.sum()`, or pad to a fixed size.
"""

RULE = Rule(
    code=CODE,
    name="dynamic-shapes",
    category=Category.PERFORMANCE,
    summary="Shapes that change per step (training DataLoader without drop_last, nonzero, masked_select, unique, t[mask])",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.utils.data.DataLoader": HOVER_LOADER,
        "torch.utils.data.DataLoader(drop_last=)": HOVER_LOADER,
        "torch.nonzero": HOVER_OPS,
        "torch.masked_select": HOVER_OPS,
        "torch.unique": HOVER_OPS,
        ".nonzero": HOVER_OPS,
        ".masked_select": HOVER_OPS,
        ".unique": HOVER_OPS,
    },
)
