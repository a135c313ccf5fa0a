"""XLA110: ``torch.nn.DataParallel`` on XLA.

DataParallel only knows CUDA devices. On an XLA host without CUDA it keeps no device ids
and calls the model directly (one replica, no parallelism); where CUDA is visible it
scatters onto CUDA devices, not XLA ones. Data parallelism on XLA is one process per device:
the XLA launcher with ``xm.optimizer_step``, or DDP over the ``xla`` backend.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.line_refs import line_ref, line_refs
from ..semantic.model import ScriptModel, arg_or_keyword, dotted, method_name, optimizer_like
from .base import (
    Category,
    EditOp,
    Finding,
    Fix,
    RemoveStatement,
    Replace,
    Rule,
    RuleContext,
    Severity,
)
from .parts.ddp_inputs import unmoved_input
from .parts.prepared_module_attribute import prepared_module_findings

CODE = "XLA110"
DATA_PARALLEL = {
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
}
STATE_METHODS = frozenset({"state_dict", "load_state_dict"})
SELF_RETURNING = frozenset({"cuda", "to", "train", "eval", "float", "half"})
WHOLE_MODEL_IO = {"torch.save", "torch.load", "torch_xla.core.xla_model.save"}
# Receivers of state_dict() that are not the model (their keys do not change).
NOT_MODEL_HINTS = ("optim", "sched", "scaler", "lr_", "ema")
ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


MOVER = "nn.DataParallel"


def _launcher(ctx: RuleContext) -> str:
    if ctx.target == "legacy":
        return "xmp.spawn(_mp_fn)"
    return "torch_xla.launch(_mp_fn)"


def _tests_the_wrapper(model: ScriptModel) -> bool:
    """``isinstance(model, nn.DataParallel)`` (any use of the class other than a call)."""
    for node in model.nodes_of(ast.Name, ast.Attribute):
        parent = model.parent(node)
        if isinstance(parent, ast.Attribute) or (
            isinstance(parent, ast.Call) and parent.func is node
        ):
            continue  # part of a longer chain, or the wrapping call itself
        if model.qualname(node) in DATA_PARALLEL:
            return True
    return False


def wrapper_reads(model: ScriptModel, call: ast.Call) -> list[ast.Attribute] | None:
    """``model.module`` reads the unwrap fix turns into ``model``, for ``model =
    nn.DataParallel(model)``: every ``.module`` read of that name in the same scope after the
    wrap (the wrapped model, which the name holds once unwrapped). None when the name is bound
    again there, or read as ``.module`` in another scope (its binding there is unknown)."""
    stmt = model.parent(call)
    # ``model = nn.DataParallel(model, device_ids=gpus).cuda()`` (held-out 53, HRNet): the
    # wrapper moved is still the wrapper.
    while (
        isinstance(stmt, ast.Attribute)
        and stmt.attr in SELF_RETURNING
        and isinstance(parent := model.parent(stmt), ast.Call)
        and parent.func is stmt
    ):
        stmt = model.parent(parent)
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and any(n is call for n in ast.walk(stmt.value))
    ):
        return None
    name = stmt.targets[0].id
    scope = model.enclosing_function(stmt) or model.tree
    reads: list[ast.Attribute] = []
    for node in model.nodes_of(ast.Attribute):
        if not (
            isinstance(node, ast.Attribute)
            and node.attr == "module"
            and isinstance(node.value, ast.Name)
            and node.value.id == name
        ):
            continue
        if (
            model.enclosing_function(node) or model.tree
        ) is not scope or node.lineno <= stmt.lineno:
            return None
        if isinstance(node.ctx, ast.Store | ast.Del):
            return None
        if not _runs_after_in_same_block(model, stmt, node):
            # HigherHRNet (held-out 83): the wrap is the ``else:`` of an ``if args.distributed:``
            # that wraps in DDP; the ``.module`` reads after the ``if`` also read the DDP.
            return None
        reads.append(node)
    for node in model.walk_scope(scope):
        if (
            isinstance(node, ast.Name)
            and node.id == name
            and isinstance(node.ctx, ast.Store)
            and node is not stmt.targets[0]
            and node.lineno > stmt.lineno
        ):
            return None  # bound again: a later ``.module`` may not be this wrapper's
    return reads


def _runs_after_in_same_block(model: ScriptModel, stmt: ast.stmt, node: ast.AST) -> bool:
    """``node`` sits in a statement after ``stmt`` in the block that holds ``stmt`` (so every
    path to it ran ``stmt``), not after a branch that ``stmt`` is one arm of."""
    parent = model.parent(stmt)
    block = next(
        (
            b
            for field in ("body", "orelse", "finalbody", "handlers")
            if isinstance(b := getattr(parent, field, None), list) and stmt in b
        ),
        None,
    )
    if block is None:
        return False
    later = {id(s) for s in block[block.index(stmt) + 1 :]}
    return any(id(a) in later for a in model.ancestors(node))


def _review_reason(model: ScriptModel, rewritten: frozenset[int] = frozenset()) -> str:
    """Why unwrapping could change what the script does ("" when nothing depends on it): every
    kind of dependence found, as a reviewer needs all of them (DeepLabv3 reads `.module` and
    strips the prefix off its checkpoint's keys, held-out 26). ``rewritten``: the ``.module``
    reads the fix itself turns into the model (their state dicts keep their keys)."""
    reasons = []
    if _tests_the_wrapper(model):
        reasons.append(
            "the script tests for the wrapper (isinstance(..., DataParallel)): without it "
            "that test turns False and the other branch runs"
        )
    if any(
        isinstance(n, ast.Attribute) and n.attr == "module" and id(n) not in rewritten
        for n in model.nodes_of(ast.Attribute)
    ):
        reasons.append(
            "the script uses `.module` (the wrapped model): without the wrapper that "
            "attribute no longer exists; use the model itself there"
        )
    wrappers = _wrapper_names(model)
    for call in model.calls:
        if wrappers is not None and _not_the_wrapper(model, call, wrappers):
            continue  # ssd.pytorch saves ``ssd_net.state_dict()``, never the wrapper
        if method_name(call) in STATE_METHODS:
            if isinstance(call.func, ast.Attribute) and id(call.func.value) in rewritten:
                continue  # ``model.module.state_dict()`` -> ``model.state_dict()``: same keys
            recv = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
            low = (recv or "").lower()
            if recv is None or not (
                optimizer_like(recv.rpartition(".")[2]) or any(h in low for h in NOT_MODEL_HINTS)
            ):
                lenient = next(
                    (
                        c.lineno
                        for c in model.method_calls("load_state_dict")
                        if any(k.arg == "strict" for k in c.keywords)
                    ),
                    None,
                )
                reasons.append(
                    "the script saves or loads state dicts: without the wrapper their keys "
                    "lose the `module.` prefix, so existing checkpoints no longer load (strip "
                    "the prefix when loading)"
                    + (
                        f"; the load with `strict=` at line {line_ref(lenient)} may then load "
                        "nothing and carry on from fresh weights, silently"
                        if lenient is not None
                        else ""
                    )
                )
                break
        if model.call_name(call) in WHOLE_MODEL_IO and not _saves_only_rewritten(
            model, call, rewritten
        ):
            reasons.append(
                "the script saves or loads checkpoints: without the wrapper the saved object "
                "and its state dict keys (no `module.` prefix) change"
            )
            break
    return "; ".join(reasons)


def _wrapper_names(model: ScriptModel) -> frozenset[str] | None:
    """The names the wrappers are bound to (``net = torch.nn.DataParallel(ssd_net)``,
    ``.cuda()`` after it included); None when a wrapper is built anywhere else (inline, in a
    return): then any save may hold it."""
    names: set[str] = set()
    for call in model.calls_to(*DATA_PARALLEL):
        node: ast.AST = call
        parent = model.parent(node)
        while (
            isinstance(parent, ast.Attribute)
            and parent.attr in SELF_RETURNING
            and isinstance(model.parent(parent), ast.Call)
        ):
            node = model.parent(parent)  # type: ignore[assignment]
            parent = model.parent(node)
        if not (isinstance(parent, ast.Assign) and parent.value is node):
            return None
        for target in parent.targets:
            name = dotted(target)
            if name is None:
                return None
            names.add(name)
    # ``m = net`` after the wrap names the wrapper too.
    for _ in range(2):
        for node in model.nodes_of(ast.Assign):
            assert isinstance(node, ast.Assign)
            value = dotted(node.value)
            if value is not None and _within(value, frozenset(names)):
                names.update(t for t in map(dotted, node.targets) if t is not None)
    # Handed on (``return model``, ``evaluate(net)``, a container): whoever gets it may save
    # it, under another name.
    for node in model.nodes_of(ast.Name, ast.Attribute):
        if not (isinstance(node.ctx, ast.Load) and dotted(node) in names):  # type: ignore[attr-defined]
            continue
        parent = model.parent(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            continue
        if isinstance(parent, ast.Call) and parent.func is node:
            continue
        if isinstance(parent, ast.Assign) and parent.value is node:
            continue  # an alias, followed above
        return None
    return frozenset(names)


def _not_the_wrapper(model: ScriptModel, call: ast.Call, wrappers: frozenset[str]) -> bool:
    """A save of a state dict or object that names no wrapper (``torch.save(ssd_net.
    state_dict(), path)``), or a ``state_dict()``/``load_state_dict()`` of something else
    (``ssd_net.vgg.load_state_dict(w)``): unwrapping changes neither. A load whose result
    goes elsewhere is judged at the ``load_state_dict`` it feeds."""
    name = model.call_name(call)
    if name in ("torch.save", "torch_xla.core.xla_model.save") and call.args:
        named = [
            dotted(n) for n in ast.walk(call.args[0]) if isinstance(n, ast.Name | ast.Attribute)
        ]
        return not any(n is not None and _within(n, wrappers) for n in named)
    if method_name(call) in STATE_METHODS and isinstance(call.func, ast.Attribute):
        owner = dotted(call.func.value)
        return owner is not None and not _within(owner, wrappers)
    if name == "torch.load":
        return _loaded_into_others(model, call, wrappers)
    return False


def _loaded_into_others(model: ScriptModel, load: ast.Call, wrappers: frozenset[str]) -> bool:
    """What ``torch.load`` gives goes only into ``X.load_state_dict(...)`` of things other than
    the wrapper (``ssd_net.vgg.load_state_dict(torch.load(path))``, or through a name whose
    every use is such a call or a key read): handed to anything else, it may reach it."""
    parent = model.parent(load)
    if isinstance(parent, ast.Call) and method_name(parent) == "load_state_dict":
        return _not_the_wrapper(model, parent, wrappers)
    if not (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        return False
    name = parent.targets[0].id
    for use in model.name_nodes(name):
        if not isinstance(use.ctx, ast.Load):
            continue
        node: ast.AST = use
        outer = model.parent(node)
        while isinstance(outer, ast.Subscript) and outer.value is node:
            node, outer = outer, model.parent(outer)
        if isinstance(outer, ast.Call) and method_name(outer) == "load_state_dict":
            if not _not_the_wrapper(model, outer, wrappers):
                return False
        elif node is use or not _scalar_read(model, node):
            return False
    return True


def _scalar_read(model: ScriptModel, node: ast.AST) -> bool:
    """``checkpoint['epoch']`` used as a value (compared, assigned, printed), not handed to
    a function that could load it into a model."""
    parent = model.parent(node)
    return not (isinstance(parent, ast.Call) and node in parent.args)


def _within(name: str, wrappers: frozenset[str]) -> bool:
    return any(name == w or name.startswith(w + ".") for w in wrappers)


def _saves_only_rewritten(model: ScriptModel, call: ast.Call, rewritten: frozenset[int]) -> bool:
    """``torch.save({"model": model.module.state_dict(), ...}, path)`` with that read rewritten:
    it saves what it saved before (the inner model's state dict, no ``module.`` prefix). Not
    when it names the wrapper any other way, or is a load (what it loads into is elsewhere)."""
    if method_name(call) == "load" or not rewritten:
        return False
    reads = [n for n in ast.walk(call) if isinstance(n, ast.Attribute) and id(n) in rewritten]
    if not reads:
        return False
    names = {r.value.id for r in reads if isinstance(r.value, ast.Name)}
    inner = {id(r.value) for r in reads}
    return not any(
        isinstance(n, ast.Name) and n.id in names and id(n) not in inner for n in ast.walk(call)
    )


def _fix(
    model: ScriptModel, call: ast.Call, reason: str, reads: list[ast.Attribute] = ()
) -> Fix | None:
    wrapped = arg_or_keyword(call, 0, "module")
    if wrapped is None or any(kw.arg is None for kw in call.keywords):
        return None
    text = model.segment(wrapped)
    if not isinstance(wrapped, ATOMS):
        text = f"({text})"
    stmt = model.parent(call)
    ops: tuple[EditOp, ...]
    if (
        isinstance(stmt, ast.Assign)
        and stmt.value is call
        and len(stmt.targets) == 1
        and dotted(stmt.targets[0]) is not None
        and dotted(stmt.targets[0]) == dotted(wrapped)
        and model.in_indented_block(stmt)
    ):
        # ``model = nn.DataParallel(model)``: without the wrapper the line has nothing to do.
        # Its ``model.module`` reads become ``model``: the object they reached.
        ops = (
            RemoveStatement(model.span(stmt)),
            *(Replace(model.span(r), model.segment(r.value)) for r in reads),
        )
    else:
        ops = (
            Replace(model.span(call), text),
            *(Replace(model.span(r), model.segment(r.value)) for r in reads),
        )
    title = f"Unwrap nn.DataParallel (use {text} itself)"
    if reason:
        return Fix(title, ops, safe=False, review_reason=reason)
    return Fix(title, ops)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from prepared_module_findings(model, CODE)
    calls = list(model.calls_to(*DATA_PARALLEL))
    if not calls:
        return
    for call in calls:
        reads = wrapper_reads(model, call) or []
        reason = _review_reason(model, frozenset(id(r) for r in reads))
        message = (
            "nn.DataParallel only knows CUDA devices: on XLA it runs one replica (or scatters "
            f"onto CUDA): use the XLA launcher ({_launcher(ctx)}, one process per device) with "
            "xm.optimizer_step, or DDP over the xla backend"
        )
        # DataParallel also scattered each forward's CPU batch onto the GPUs: unwrapped, a
        # CPU input reaches the XLA model ("Expected XLA tensor"), so the unwrap waits for review.
        cpu = unmoved_input(model, call, MOVER)
        reasons = [r for r in (reason, cpu.reason if cpu else "") if r]
        if cpu is not None:
            message += (
                "; but DataParallel also moved each forward's inputs onto the device "
                f"(line {line_ref(cpu.line)})"
            )
            if cpu.forward is not None:
                yield Finding(
                    CODE,
                    "this input is a CPU tensor: nn.DataParallel moved it onto the device, "
                    "nothing does on XLA (the model would get a CPU tensor)",
                    model.span(cpu.forward),
                    Severity.WARNING,
                    manual="move the inputs with .to(device)",
                )
        left = _module_reads_left(model, reads)
        fix = None if left else _fix(model, call, "; ".join(reasons), reads)
        manual = "remove the nn.DataParallel wrapper and launch one process per device"
        if left:
            # Unwrapped, each of these raises AttributeError, or inside a ``try/except: pass``
            # silently skips what it did (held-out 155: PC-DARTS' ``model.module.
            # arch_parameters()``, PyCIL's ``self._network = self._network.module``).
            manual += (
                f", and use the model itself where the script reads `.module` (line "
                f"{line_refs(sorted({n.lineno for n in left}))}): those reads are not this "
                "fix's to rewrite, so none is offered"
            )
        yield Finding(
            CODE,
            message,
            model.span(call),
            Severity.WARNING,
            fix=fix,
            manual=None if fix is not None else manual,
        )


def _module_reads_left(model: ScriptModel, rewritten: list[ast.Attribute]) -> list[ast.Attribute]:
    """The ``.module`` reads of the script the unwrap would not rewrite."""
    done = {id(r) for r in rewritten}
    return [
        n
        for n in model.nodes_of(ast.Attribute)
        if isinstance(n, ast.Attribute) and n.attr == "module" and id(n) not in done
    ]


HOVER = """\
**XLA110 · nn.DataParallel does not parallelise on XLA**

`torch.nn.DataParallel` only knows CUDA devices. Measured on torch_xla 2.9 (PJRT CPU, no
CUDA): `DataParallel(model_on_xla)` keeps `device_ids == []` and calls the model directly,
one replica, while its state dict keys gain a `module.` prefix.

Data parallelism on XLA is one process per device:

| target | launcher |
|---|---|
| modern (torch_xla ≥ 2.5) | `torch_xla.launch(_mp_fn)` + `xm.optimizer_step(optimizer)` (or DDP with `init_process_group("xla", init_method="xla://")`) |
| legacy (1.13) | `xmp.spawn(_mp_fn)` + `xm.optimizer_step(optimizer)` |

Fix: unwrap (`nn.DataParallel(model)` → `model`). It needs review when the script uses
`model.module` or saves/loads state dicts (their keys lose the `module.` prefix).
"""

RULE = Rule(
    code=CODE,
    name="data-parallel",
    category=Category.DISTRIBUTED,
    summary="nn.DataParallel (CUDA only; one replica on XLA) → unwrap; launch one process per "
    "device (torch_xla.launch + xm.optimizer_step, or DDP over xla)",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={q: HOVER for q in DATA_PARALLEL},
)
