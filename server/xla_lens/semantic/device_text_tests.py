"""Tests that ask whether the script's device is a CUDA device by its text or type:
``if 'cuda' in str(device):``, ``if device.type == 'cuda':``, ``str(device).startswith('cuda')``,
``device == 'cuda'``. Once the device is the XLA device they are False, so what they guard
stops happening: audioset_tagging_cnn (held-out 103) sets ``device = 'cpu'`` in the ``else`` of
one and moves the model only under another, so the converted script (picker fixed, with
``--unsafe-fixes``) trained on the CPU with nothing left reported. Only tests with such an
effect are named: a guarded move of the device's value (``model.to(device)``, ``.cuda()``), or
an ``else`` that sets a device name to the CPU. Pure analysis: XLA101 words it."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .advice import Advice
from .device_intent import XLA_DEVICE_CALLS
from .line_refs import line_ref
from .model import ScriptModel, const_str, method_name, receiver
from .node_helpers import dotted, is_cuda_string

MANUAL = (
    'Let the XLA device pass this test too (`{name}.type in ("cuda", "xla")`, or `"xla"` in '
    "its text), or drop the test where what it guards must always happen."
)


def _tested_device(model: ScriptModel, test: ast.expr) -> ast.expr | None:
    """The device expression a CUDA text/type test reads, or None."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, ast.In) and const_str(left) == "cuda":
            return _unwrap_str(right)
        if isinstance(op, ast.Eq) and const_str(right) == "cuda":
            if isinstance(left, ast.Attribute) and left.attr == "type":
                return left.value
            return _unwrap_str(left)
    if (
        isinstance(test, ast.Call)
        and method_name(test) == "startswith"
        and len(test.args) == 1
        and const_str(test.args[0]) == "cuda"
    ):
        return _unwrap_str(receiver(test))
    return None


def _unwrap_str(node: ast.AST | None) -> ast.expr | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "str"
        and len(node.args) == 1
    ):
        node = node.args[0]
    return node if dotted(node) is not None else None  # type: ignore[return-value]


def _names_an_accelerator(model: ScriptModel, node: ast.AST) -> bool:
    if is_cuda_string(node) or const_str(node) in ("xla", "xla:0"):
        return True
    if not isinstance(node, ast.Call):
        return False
    called = model.call_name(node) or ""
    return called.startswith("torch.cuda.") or called in XLA_DEVICE_CALLS


def _chooses_cuda(model: ScriptModel, name: str) -> bool:
    """Something assigns ``name`` a value naming CUDA (a picker, a CUDA string), or the XLA
    device XLA101's fix put there: the judgement must not flip once that fix is applied."""
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        if any(dotted(t) == name for t in node.targets) and any(
            _names_an_accelerator(model, n) for n in ast.walk(node.value)
        ):
            return True
    return False


def _guarded_move(block: list[ast.stmt], name: str) -> ast.Call | None:
    for stmt in block:
        for n in ast.walk(stmt):
            if not isinstance(n, ast.Call):
                continue
            if method_name(n) == "cuda" or (
                method_name(n) == "to" and n.args and dotted(n.args[0]) == name
            ):
                return n
    return None


def _cpu_fallback(block: list[ast.stmt]) -> ast.Assign | None:
    for stmt in block:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and (target := dotted(stmt.targets[0])) is not None
            and "dev" in target.rpartition(".")[2].lower()
        ):
            value = (
                stmt.value.args[0]
                if isinstance(stmt.value, ast.Call) and stmt.value.args
                else stmt.value
            )
            if (const_str(value) or "").split(":")[0] == "cpu":
                return stmt
    return None


def cuda_device_guard(model: ScriptModel, stmt: ast.stmt) -> ast.If | None:
    """The ``if`` whose body holds ``stmt`` (directly) and whose test asks whether the
    script's device is a CUDA device by text or type (``if device == "cuda":``): False once
    XLA101 makes that device the XLA device."""
    parent = model.parent(stmt)
    if not isinstance(parent, ast.If) or stmt not in parent.body:
        return None
    device = _tested_device(model, parent.test)
    name = dotted(device) if device is not None else None
    if name is None or not _picked(model, name):
        return None
    return parent


def _picked(model: ScriptModel, name: str) -> bool:
    """``name`` is bound to a device picker or a CUDA device (what XLA101 makes the XLA
    device), not to a value derived from another device (nanoGPT's ``device_type = "cuda" if
    device.startswith("cuda") else "cpu"`` stays "cpu" on an XLA host)."""
    from .pickers import picker  # noqa: PLC0415 (pickers imports this module's neighbours)

    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        if any(dotted(t) == name for t in node.targets) and (
            picker(model, node.value) is not None or is_cuda_string(node.value)
        ):
            return True
    return False


def xla_passing_test(model: ScriptModel, test: ast.expr) -> str | None:
    """``device in ("cuda", "xla")`` for ``device == "cuda"`` (``device.type`` alike): the
    same test that the XLA device passes too; None for other forms."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and const_str(test.comparators[0]) == "cuda"
        and dotted(test.left) is not None
    ):
        return None
    written = model.segment(test.comparators[0])
    quote = written[0] if written[:1] in ("'", '"') else '"'
    return f"{model.segment(test.left)} in ({quote}cuda{quote}, {quote}xla{quote})"


def device_text_test_advice(model: ScriptModel) -> Iterator[Advice]:
    for node in model.nodes_of(ast.If):
        assert isinstance(node, ast.If)
        device = _tested_device(model, node.test)
        name = dotted(device) if device is not None else None
        if name is None or not _chooses_cuda(model, name):
            continue
        test = model.segment(node.test)[:60]
        fallback = _cpu_fallback(node.orelse)
        move = _guarded_move(node.body, name)
        if fallback is not None:
            effect = (
                f"the `else` sets `{model.segment(fallback)[:50]}` (line "
                f"{line_ref(fallback.lineno)}) and the script trains on the CPU"
            )
        elif move is not None:
            effect = (
                f"the move it guards (line {line_ref(move.lineno)}: "
                f"`{model.segment(move)[:40]}`) never runs and what it moves stays on the CPU"
            )
        else:
            continue
        yield Advice(
            f"`{test}` asks whether {name} is a CUDA device: for the XLA device it is False, "
            f"so after conversion {effect}",
            model.span(node.test),
            manual=MANUAL.format(name=name),
        )
