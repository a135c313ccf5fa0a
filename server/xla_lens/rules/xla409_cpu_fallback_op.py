"""XLA409: ops torch_xla cannot lower run on the CPU, every step.

An aten op without an XLA lowering is run by torch_xla's CPU fallback: the pending graph up to
it runs, its inputs are copied to the host, the CPU kernel runs, the result is copied back
and a new graph starts. Measured on torch_xla 2.9 (PJRT CPU): a training step whose forward
calls ``torch.median`` ran 2 graphs and 1 device-to-host copy per step instead of 1 and 0;
with ``torch.stft`` 3 and 2. ``torch.istft`` on an XLA tensor aborted the process.

Reported where the step runs the op: in the training loop, in the functions and module
forwards it calls (this file and sibling modules, as XLA401 follows them), in the forward of
the script's ``nn.Module`` classes, and where a module or wrapper that runs such an op every
forward is made (``nn.CTCLoss()``, ``weight_norm(conv)``). An op on a value the script keeps
on the host (a CPU tensor, numpy data) is not reported, nor anything in a ``Dataset`` class.
No fix: the replacements the page suggests change numerics or code structure.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.calls import class_methods, classes
from ..semantic.host_values import HostValues, host_values
from ..semantic.line_refs import line_refs
from ..semantic.model import ScriptModel
from ..semantic.tensors import loop_nodes
from . import xla117_not_on_device
from .base import Category, Finding, Rule, RuleContext, Severity
from .parts.fallback_ops import ABORTS, GENERIC, FallbackOp, fallback_call, fallback_module
from .parts.helper_reads import IN_LOOP, helper_message, helper_reads
from .parts.periodic_blocks import periodic_block
from .parts.sibling_fallbacks import sibling_fallbacks

CODE = "XLA409"
MODULE_ROOT = "torch.nn."
DATASET_BASES = frozenset({"torch.utils.data.Dataset", "torch.utils.data.IterableDataset"})


def _message(op: FallbackOp, where: str) -> str:
    if op.effect == ABORTS:
        return (
            f"`{op.shown}` runs {op.aten} {where}: torch_xla 2.9 does not lower it, and on an "
            "XLA tensor it aborted the whole process (measured on PJRT CPU), with no Python "
            "exception to catch"
        )
    return (
        f"`{op.shown}` runs {op.aten} {where}: torch_xla does not lower it, so each call runs "
        "the pending graph, copies its input to the host, computes on the CPU and copies the "
        "result back (measured on torch_xla 2.9: a step calling torch.median ran two graphs "
        "and a device-to-host copy instead of one graph)"
    )


def _finding(op: FallbackOp, message: str, span) -> Finding:  # type: ignore[no-untyped-def]
    severity = Severity.ERROR if op.effect == ABORTS else Severity.WARNING
    return Finding(CODE, message, span, severity, manual=op.advice or GENERIC)


def _on_device_op(model: ScriptModel, values: HostValues, node: ast.AST) -> FallbackOp | None:
    found = fallback_call(model, node)
    if found is None:
        return None
    op, tensor, method = found
    if method:  # ``.median()`` is pandas' too: only of a value judged a device tensor
        return op if values.is_device(tensor) else None
    return None if values.is_host(tensor) else op


_SEP = "\0"


def _helper_test(model: ScriptModel, values: HostValues, node: ast.AST) -> str | None:
    """``helper_reads``' test: the op, packed in its ``what`` string."""
    op = _on_device_op(model, values, node)
    return None if op is None else _SEP.join((op.shown, op.aten, op.effect, op.advice))


def _module_classes(model: ScriptModel) -> list[ast.ClassDef]:
    """The script's ``nn.Module`` classes (a base from ``torch.nn`` or such a class of the
    script), Dataset classes excluded."""
    found: dict[str, ast.ClassDef] = {}
    by_name = classes(model)
    changed = True
    while changed:
        changed = False
        for name, cls in by_name.items():
            if name in found:
                continue
            bases = [model.qualname(b) or "" for b in cls.bases]
            if any(b in DATASET_BASES for b in bases):
                continue
            if any(b.startswith(MODULE_ROOT) for b in bases) or any(
                isinstance(b, ast.Name) and b.id in found for b in cls.bases
            ):
                found[name] = cls
                changed = True
    return list(found.values())


def _forward_methods(cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """``forward`` and the methods it calls through ``self.<name>(...)``, transitively."""
    methods = class_methods(cls)
    order: list[str] = []
    todo = ["forward"] if "forward" in methods else []
    while todo:
        name = todo.pop()
        if name in order:
            continue
        order.append(name)
        for node in ast.walk(methods[name]):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
                and node.func.attr in methods
            ):
                todo.append(node.func.attr)
    return [methods[n] for n in order]


def _in_dataset(model: ScriptModel, node: ast.AST) -> bool:
    for a in model.ancestors(node):
        if isinstance(a, ast.ClassDef):
            names = {s.name for s in a.body if isinstance(s, ast.FunctionDef)}
            bases = {model.qualname(b) for b in a.bases}
            return "__getitem__" in names or "__iter__" in names or bool(bases & DATASET_BASES)
    return False


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if model.memo(
        (CODE, xla117_not_on_device.CODE, ctx.target),
        lambda: xla117_not_on_device.places_nothing(model, ctx),
    ):
        return  # nothing goes to a device: these ops run on the CPU as written
    values = host_values(model)
    said: set[int] = set()
    for _loop, node in loop_nodes(model):
        op = _on_device_op(model, values, node)
        if op is not None and id(node) not in said:
            said.add(id(node))
            yield _finding(op, _message(op, IN_LOOP), model.span(node))
    every_step = lambda loop, node: periodic_block(model, loop, node) is None  # noqa: E731
    for read in helper_reads(model, _helper_test, every_step, lambda fn: False):
        shown, aten, effect, advice = read.what.split(_SEP)
        op = FallbackOp(shown, aten, advice, effect)
        if read.where is None:
            if id(read.node) in said:
                continue
            said.add(id(read.node))
        message = helper_message(read, _message(op, IN_LOOP))
        yield _finding(op, message, model.span(read.call if read.where else read.node))
    for cls in _module_classes(model):
        for method in _forward_methods(cls):
            for node in model.walk_scope(method):
                op = _on_device_op(model, values, node)
                if op is not None and id(node) not in said:
                    said.add(id(node))
                    where = f"in `{cls.name}.{method.name}`, every forward of the module"
                    yield _finding(op, _message(op, where), model.span(node))
    yield from _sibling_findings(model)
    # One finding per op and scope (a vocoder's __init__ wraps a dozen convs in weight_norm).
    made_in: dict[tuple[str, int], list[ast.Call]] = {}
    for node in model.nodes_of(ast.Call):
        made = fallback_module(model, node)
        if made is not None and not _in_dataset(model, node):
            scope = model.enclosing_function(node)
            made_in.setdefault((made.aten, id(scope)), []).append(node)  # type: ignore[arg-type]
    for calls in made_in.values():
        first = calls[0]
        made = fallback_module(model, first)
        assert made is not None
        more = ""
        if len(calls) > 1:
            lines = line_refs(c.lineno for c in calls[1:6]) + (", ..." if len(calls) > 6 else "")
            more = f" (also made on line{'s' if len(calls) > 2 else ''} {lines})"
        maker = model.segment(first.func)
        yield _finding(
            made,
            f"`{maker}(...)` makes a module whose every forward (and backward) runs "
            f"{made.aten}, which torch_xla does not lower: on the XLA device each call runs the "
            "pending graph, copies its inputs to the host, computes on the CPU and copies the "
            f"result back{more}",
            model.span(first),
        )


def _sibling_findings(model: ScriptModel) -> Iterator[Finding]:
    def test(other: ScriptModel, node: ast.AST) -> FallbackOp | None:
        return _on_device_op(other, host_values(other), node)

    for found in sibling_fallbacks(model, test):
        ops = "; ".join(f"line {n}: {op.shown} ({op.aten})" for n, op in found.ops[:4])
        more = f"; and {len(found.ops) - 4} more" if len(found.ops) > 4 else ""
        aborts = any(op.effect == ABORTS for _, op in found.ops)
        advice = next((op.advice for _, op in found.ops if op.advice), GENERIC)
        yield Finding(
            CODE,
            f"`{model.segment(found.call.func)}(...)` runs `{found.class_name}` of "
            f"{found.path.name} every training step, and that code calls ops torch_xla does "
            f"not lower ({ops}{more}): each runs on the CPU, with the pending graph run and "
            "the tensors copied to the host and back every call"
            + ("; torch.istft on an XLA tensor aborted the whole process" if aborts else ""),
            model.span(found.call),
            Severity.ERROR if aborts else Severity.WARNING,
            manual=f"In {found.path}: {advice}",
        )


HOVER = """\
**XLA409 · op with no XLA lowering**

torch_xla runs aten ops it cannot lower on the CPU: the graph so far runs, the inputs are
copied to the host and the result back, every call. Measured on torch_xla 2.9: `torch.stft`
and `torch.fft.*`, `ctc_loss`, `searchsorted`/`bucketize`, `histc`, `bincount`, `median`,
`grid_sample`, `embedding_bag`, `F.unfold`/`F.fold`, `huber_loss`, `weight_norm`, bicubic and
1-D linear `interpolate`. `torch.istft` on an XLA tensor aborts the process.
"""

RULE = Rule(
    code=CODE,
    name="cpu-fallback-op",
    category=Category.PERFORMANCE,
    summary="Ops torch_xla cannot lower (stft/fft, ctc_loss, median, grid_sample, weight_norm, ...) run on the CPU every step",
    severity=Severity.WARNING,
    check=check,
    has_fix=False,
    hover={
        "torch.stft": HOVER,
        "torch.istft": HOVER,
        "torch.median": HOVER,
        "torch.nn.functional.grid_sample": HOVER,
        "torch.nn.functional.ctc_loss": HOVER,
        "torch.nn.CTCLoss": HOVER,
        "torch.nn.utils.weight_norm": HOVER,
        "torch.nn.utils.parametrizations.weight_norm": HOVER,
    },
)
