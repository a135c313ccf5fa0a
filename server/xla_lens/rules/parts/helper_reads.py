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

from ...semantic.calls import FunctionNode, module_forward
from ...semantic.host_values import HostValues, host_values
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, TrainingLoop, method_name, receiver
from ...semantic.tensors import HOST_METHODS, loop_nodes, scope_of
from ...semantic.value_kinds import CPU, DEV, NUM, UNK, Value, verdict
from ...semantic.value_places import Places
from ...semantic.workspace_calls import ParsedModule, helper_target, parsed_module
from ...semantic.workspace_classes import ClassCall, class_call

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
    mixed: bool = False  # a CPU tensor on some paths, a device (or unknown) one on others
    returned: bool = False  # the helper the loop calls returns the value read


# A helper's reading found in its body: (helpers down to the reading one, the calls from
# one to the next with the function each runs, the read, its kind).
Found = tuple[tuple[str, ...], tuple[tuple[ast.Call, FunctionNode], ...], ast.AST, str]


def helper_reads(
    model: ScriptModel,
    reads: ReadTest,
    every_step: Callable[[TrainingLoop, ast.AST], bool],
    skipped: Callable[[FunctionNode], bool],
) -> Iterator[HelperRead]:
    """Reads in helpers the training loops call every step: each read of this file once
    (the first loop and call that reach it); a sibling's reads once per call. A read of a
    value the call makes a host value (a CPU tensor, a number) is none."""
    values = host_values(model)
    steps = model.steps
    seen: set[int] = set()
    for loop, node in loop_nodes(model):
        if not isinstance(node, ast.Call) or _host_arguments(values, node):
            continue
        fn = steps.callee(node)
        forward = module_forward(model, node) if fn is None else None
        if fn is None and forward is not None:
            fn = forward
        if fn is None:
            sibling = _sibling_reads(model, node, reads)
            if sibling and every_step(loop, node):
                path, judged = sibling
                chain, read, what, kind = judged
                where = f"{Path(path).name}:{read.lineno}"  # type: ignore[attr-defined]
                parsed = parsed_module(Path(path))
                returned = parsed is not None and _returned(sibling_model(parsed), chain, read)
                yield HelperRead(loop, node, chain, read, what, where, kind == "mixed", returned)
            continue
        if _not_a_helper(model, fn) or skipped(fn):
            continue
        found = _reads_in(model, fn, reads, skipped, MAX_DEPTH)
        if not found or not every_step(loop, node):
            continue
        bound = isinstance(node.func, ast.Attribute) or forward is not None  # ``self.m(...)``
        for chain, hops, read, what in found:
            if id(read) in seen:
                continue
            kind = _judge(model, node, model, fn, bound, hops, read)
            if kind is not None:
                seen.add(id(read))
                returned = _returned(model, chain, read)
                yield HelperRead(loop, node, chain, read, what, None, kind == "mixed", returned)


def _returned(model: ScriptModel, chain: tuple[str, ...], read: ast.AST) -> bool:
    """The helper returns the value it reads: ``return t.item()``, or ``action =
    t.item()`` then ``return action`` (held-out 133's TPU actor-critic) with the name bound
    nowhere else in the function."""
    if len(chain) != 1:
        return False
    stmt = model.enclosing_statement(read)
    if isinstance(stmt, ast.Return):
        return True
    fn = model.enclosing_function(read)
    if not (
        fn is not None
        and isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(target := stmt.targets[0], ast.Name)
        and model.parent(stmt) is fn
    ):
        return False
    last = fn.body[-1]
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Name)):
        return False
    stores = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Name) and n.id == target.id and isinstance(n.ctx, ast.Store)
    ]
    return last.value.id == target.id and stores == [target]


def helper_message(read: HelperRead, message: str) -> str:
    """The rule's ``message`` for a read in the loop, said of the helper that makes it."""
    loop_line = line_ref(read.loop.node.lineno)
    through = ""
    if len(read.chain) > 1:
        through = ", through " + ", ".join(f"`{name}`" for name in read.chain[:-1])
    if read.where is not None:
        shown = ast.unparse(read.call.func)
        head = f"`{shown}(...)` runs {read.where} in `{read.chain[-1]}`, where "
        where = f"every step, from the training loop on line {loop_line}"
        return head + message.replace(IN_LOOP, where)
    guard = _guard_in_loop(read)
    when = f" while `{guard}` holds" if guard else ""
    where = (
        f"in `{read.chain[-1]}`, which the training loop on line {loop_line} calls every "
        f"step{when} (line {line_ref(read.call.lineno)}{through})"
    )
    return message.replace(IN_LOOP, where)


def _guard_in_loop(read: HelperRead) -> str | None:
    """The test of the innermost ``if`` inside the loop whose body holds the call (``if
    args.visdom:`` around ssd.pytorch's plot update, held-out 106), shown short; None when
    the call runs unconditionally."""
    guards = [
        node
        for stmt in read.loop.node.body
        for node in ast.walk(stmt)
        if isinstance(node, ast.If) and any(n is read.call for s in node.body for n in ast.walk(s))
    ]
    if not guards:
        return None
    shown = ast.unparse(max(guards, key=lambda g: (g.lineno, g.col_offset)).test)
    return shown if len(shown) <= 40 else shown[:37] + "..."


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
) -> tuple[Found, ...]:
    """The reads ``fn`` makes, itself or in the helpers it calls (``depth`` levels in all),
    in source order, worked out once per function and depth. A read under a periodic
    ``if n % k == 0:`` of the helper is not an every-step read."""

    def compute() -> tuple[Found, ...]:
        values = host_values(model)
        out: list[tuple[tuple[int, int], Found]] = []
        for node in model.walk_scope(fn):
            what = reads(model, values, node)
            if what is not None:
                if not _periodic_in(model, fn, node):
                    out.append((_position(node), ((fn.name,), (), node, what)))
            elif depth > 1 and isinstance(node, ast.Call) and not _host_arguments(values, node):
                inner = model.steps.callee(node)
                if inner is None or inner is fn or _not_a_helper(model, inner) or skipped(inner):
                    continue
                for chain, hops, read, kind in _reads_in(model, inner, reads, skipped, depth - 1):
                    found = ((fn.name, *chain), ((node, inner), *hops), read, kind)
                    out.append((_position(node), found))
        out.sort(key=lambda pair: pair[0])
        return tuple(found for _, found in out)

    # Keyed by the rule's test too: XLA401 and XLA409 ask about the same helpers.
    return model.memo((_reads_in, fn, depth, reads), compute)


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _periodic_in(model: ScriptModel, fn: FunctionNode, node: ast.AST) -> bool:
    child = node
    for a in model.ancestors(node):
        if a is fn:
            return False
        if (
            isinstance(a, ast.If)
            and child in a.body
            and any(
                isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(a.test)
            )
        ):
            return True
        child = a
    return False


def _judge(
    model: ScriptModel,
    call: ast.Call,
    target: ScriptModel,
    fn: FunctionNode,
    bound: bool,
    hops: tuple[tuple[ast.Call, FunctionNode], ...],
    read: ast.AST,
) -> str | None:
    """Whether ``read`` (in ``target``, reached from the loop's ``call`` of ``fn`` and then
    ``hops``) reads a device tensor (``"device"``), one that is a CPU tensor on some paths
    (``"mixed"``), or a host value (None), with each helper's parameters bound to what its
    caller passes (``semantic/value_places.py``)."""
    values = host_values(model)
    default = values._default_device or target is not model and _sets_default(target)
    places = _places(target, default)
    args = [_loop_value(model, values, a) for a in call.args]
    kws = {k.arg: _loop_value(model, values, k.value) for k in call.keywords if k.arg}
    env = places.bind(call, fn, args, kws, frozenset({UNK}) if bound else None)
    for inner_call, inner in hops:
        env = places.call_env(inner_call, inner, fn, env, 0)
        fn = inner
    found = [verdict(places.value(e, fn, env)) for e in _read_values(read)]
    if "device" in found:
        return "device"
    return "mixed" if "mixed" in found else None


def _places(model: ScriptModel, default: bool) -> Places:
    return model.memo((Places, default), lambda: Places(model, default))


def _sets_default(model: ScriptModel) -> bool:
    return host_values(model)._default_device


def _loop_value(model: ScriptModel, values: HostValues, arg: ast.expr) -> Value:
    """Where an argument of the loop's call lives, by the script's own judgement."""
    if isinstance(arg, ast.Starred):
        return frozenset({UNK})
    if values.is_device(arg):
        return frozenset({DEV})
    scope = scope_of(model, arg)
    fn = scope if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) else None
    found = _places(model, values._default_device).value(arg, fn, {})
    if values.is_host(arg) and not isinstance(found, tuple):
        # Not a pending tensor, by the script's judgement: a number or a CPU tensor (a device
        # object or name, ``torch.device("cuda")``, still places what is built on it there).
        return frozenset(CPU if k == UNK else k for k in found)
    return found


def _read_values(read: ast.AST) -> list[ast.expr]:
    """The values a read reads: ``t`` of ``t.cpu().item()``, the arguments of ``float(t)`` or
    ``print(a, b)``, the formatted values of an f-string, the operands of a tested comparison."""
    if isinstance(read, ast.JoinedStr):
        return [v.value for v in read.values if isinstance(v, ast.FormattedValue)]
    if isinstance(read, ast.Compare):  # ``if torch.min(y) < -1.:``: what it compares
        return [read.left, *read.comparators]
    if isinstance(read, ast.Assign):  # ``buf[:, i] = f(x)``: the value stored on the host
        return [read.value]
    if not isinstance(read, ast.Call):
        return []
    recv = receiver(read)
    if recv is not None and method_name(read) in HOST_METHODS:
        while isinstance(recv, ast.Call) and method_name(recv) in HOST_METHODS:
            recv = receiver(recv)  # type: ignore[assignment]
        return [recv] if recv is not None else []
    args = [a.value if isinstance(a, ast.Starred) else a for a in (*read.args, *read.keywords)]
    # ``assert torch.isfinite(pred).all()``: a tested method call reads what it returns.
    return args or [read]


# Sibling modules, each parsed into a model once (keyed by the parsed module it came from).
_sibling_models: dict[int, tuple[object, ScriptModel]] = {}


def sibling_model(parsed: ParsedModule) -> ScriptModel:
    """A sibling module as a model, built once per parsed version (XLA401's and XLA402's
    reads of the helpers a loop calls in other files)."""
    cached = _sibling_models.get(id(parsed))
    if cached is None or cached[0] is not parsed:
        if len(_sibling_models) >= 32:
            _sibling_models.clear()
        # "<sibling>": its own imports are not followed further.
        cached = (parsed, ScriptModel(parsed.source, parsed.tree, "<sibling>"))
        _sibling_models[id(parsed)] = cached
    return cached[1]


def _sibling_reads(
    model: ScriptModel, call: ast.Call, reads: ReadTest
) -> tuple[str, tuple[tuple[str, ...], ast.AST, str, str]] | None:
    """``(file, (helpers down to the reading one, read, kind, "device" or "mixed"))`` for the
    first read of a device tensor in a sibling module's function (or a method of an object of a
    sibling module's class: ``ada.tune(pred)``) the call runs, or None."""
    target = helper_target(model, call)
    parsed: ParsedModule | None = None
    fn: FunctionNode | None = None
    bound = False
    if target is not None:
        parsed = parsed_module(target.path)
        if parsed is not None:
            fn = parsed.functions.get(target.function)
    else:
        method = _class_call(model, call) if isinstance(call.func, ast.Attribute) else None
        if method is not None and method.method.name != "__init__":
            if str(method.owner.path) != str(model.path):
                parsed, fn, bound = method.owner.module, method.method, True
    if parsed is None or fn is None:
        return None
    sibling = sibling_model(parsed)
    if _not_a_helper(sibling, fn):
        return None
    judged: list[tuple[tuple[str, ...], ast.AST, str, str]] = []
    handed_a_tensor = any(
        _may_be_a_tensor(model, a) for a in (*call.args, *(k.value for k in call.keywords))
    )
    for chain, hops, read, what in _reads_in(sibling, fn, reads, lambda _fn: False, MAX_DEPTH):
        if not handed_a_tensor and _tensor_guarded(sibling, read):
            continue  # ``if isinstance(v, torch.Tensor): v = v.item()`` handed numbers
        kind = _judge(model, call, sibling, fn, bound, hops, read)
        if kind is not None:
            judged.append((chain, read, what, kind))
    if not judged:
        return None
    first = next((j for j in judged if j[3] == "device"), judged[0])
    return str(parsed.path), first


def _may_be_a_tensor(model: ScriptModel, arg: ast.expr) -> bool:
    """Not a number on some path and never a device value: ``max_lr = 0.0`` then
    ``max_lr = max(max_lr, group["lr"])`` is a number; ``opt.param_groups[0]["params"][0]``
    (unknown) may be a tensor."""
    values = host_values(model)
    if isinstance(arg, ast.Starred) or values.is_device(arg):
        return True
    found = _loop_value(model, values, arg)
    return DEV in found or NUM not in found


TENSOR_TESTS = frozenset({"torch.is_tensor"})


def _tensor_guarded(model: ScriptModel, read: ast.AST) -> bool:
    """The read runs only for a tensor: under ``if isinstance(v, torch.Tensor):`` (or
    ``torch.is_tensor(v)``) that tests the value it reads (VideoMAE's
    ``MetricLogger.update``, held-out 85: handed Python numbers, it reads nothing)."""
    read_names = {n.id for v in _read_values(read) for n in ast.walk(v) if isinstance(n, ast.Name)}
    for a in model.ancestors(read):
        if not isinstance(a, ast.If):
            continue
        test = a.test
        if not isinstance(test, ast.Call) or not test.args:
            continue
        name = model.call_name(test) or (test.func.id if isinstance(test.func, ast.Name) else "")
        tested = test.args[0]
        if isinstance(tested, ast.Name) and tested.id in read_names:
            if name in TENSOR_TESTS:
                return True
            if name == "isinstance" and len(test.args) == 2:
                kind = model.qualname(test.args[1]) or ""
                if kind == "torch.Tensor":
                    return True
    return False


def _class_call(model: ScriptModel, call: ast.Call) -> ClassCall | None:
    try:
        return class_call(model, call)
    except ValueError:
        # ``workspace.module_file`` raises on ``from . import x`` in a package module
        # (``Path('.').with_suffix``; XLA118 hits it too): no class reached, the rest stands.
        return None
