"""XLA108: ``torch.save`` of a state dict (a checkpoint), where XLA wants ``xm.save``.

A state dict of an XLA model holds XLA tensors: ``xm.save`` moves them to the CPU and
writes on the master ordinal only, so replicas do not all write the same file. A checkpoint
built as a dataclass (``asdict(Snapshot(model_state=model.state_dict(), ...))``) counts too.

A whole module (``torch.save(model, f)``) is reported without a fix: ``xm.save`` copies only
plain ``torch.Tensor`` values to the CPU (its ``select_fn`` is ``type(v) == torch.Tensor``),
so a module's ``nn.Parameter``s stay XLA tensors while its buffers become CPU ones — a file
whose reload mixes devices (verified on torch_xla 2.9). Saving a state dict or a CPU copy
changes what the file holds and what loads it, which only the author can decide. A
checkpoint that holds such a module (or an optimizer object) next to its state dicts keeps
the swap for review (parts/checkpoint_objects.py): xm.save leaves those parameters on XLA.

A checkpoint handed to a save helper of another module (``utils.save_on_master(...)``) is
reported at the call without a fix (parts/checkpoint_helpers.py): the torch.save is there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ..semantic.calls import classes
from ..semantic.injected_xla import injected_xla_calls
from ..semantic.line_refs import line_ref, line_refs
from ..semantic.model import (
    SCOPE_TYPES,
    Emitter,
    ScriptModel,
    arg_or_keyword,
    dotted,
    keyword,
    method_name,
)
from ..semantic.params import argument_values, parameter_of
from ..semantic.rank_guards import attribute_values
from ..semantic.replica_paths import names_matching, per_replica_path
from ..semantic.workspace_calls import helper_target, parsed_module
from .base import (
    Category,
    EditOp,
    Finding,
    Fix,
    Replace,
    Rule,
    RuleContext,
    SetArgs,
    SetKeyword,
    Severity,
)
from .parts.checkpoint_data import device_data
from .parts.checkpoint_helpers import helper_save_findings
from .parts.checkpoint_objects import (
    Held,
    advice,
    copied_from,
    describe,
    held_on_device,
    placed_module,
)
from .parts.cpu_copies import copied_to_cpu
from .parts.cpu_round_trips import (
    MOVED_MESSAGE,
    MOVED_REASON,
    module_moved_to_cpu,
    nothing_trains_after,
)
from .parts.rebuilt_containers import rebuilt_container_reason, walker_crash_reason
from .parts.resumed_entries import resumed_entry_reason
from .parts.safetensors_saves import safetensors_state_saves
from .parts.trainer_model_saves import device_model_saves, trainer_model_saves

CODE = "XLA108"
# torch.save(obj, f, ...) keywords and their positions in xm.save(data, file_or_path).
POSITIONS = {"obj": 0, "f": 1}
RANKISH = re.compile(r"rank|ordinal|master|main_process|is_main", re.IGNORECASE)


ASDICT = frozenset({"dataclasses.asdict"})
BUFFERS = frozenset({"io.BytesIO"})


def _dataclass(model: ScriptModel, call: ast.Call) -> ast.ClassDef | None:
    """The script's ``@dataclass`` class this call builds. ``slots=True`` ones are left out:
    xm.save rebuilds an object through its ``__dict__``, which a slotted instance lacks."""
    if not isinstance(call.func, ast.Name):
        return None
    cls = classes(model).get(call.func.id)
    if cls is None:
        return None
    for deco in cls.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if model.qualname(target) == "dataclasses.dataclass":
            slots = keyword(deco, "slots") if isinstance(deco, ast.Call) else None
            slotted = slots is not None and not (
                isinstance(slots.value, ast.Constant) and slots.value.value is False
            )
            return None if slotted else cls
    return None


def _builds_state_dict(model: ScriptModel, call: ast.Call) -> bool:
    """``lora.lora_state_dict(model)`` / ``get_peft_model_state_dict(model)`` (a library's
    partial state dict, named so), or a function of this script returning one built from a
    ``.state_dict()`` (``{k: v for k, v in model.state_dict().items() if ...}``): the model's
    device tensors either way (held-out 9 r2, LoRA)."""
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if called.endswith("state_dict") and called != "load_state_dict" and call.args:
        return True
    fn = model.functions.get(called) if isinstance(func, ast.Name) else None
    if fn is None:
        return workspace_state_builder(model, call) is not None
    return returns_state_dict(fn)


def returns_state_dict(fn: ast.AST) -> bool:
    """``fn`` returns a value built from a ``.state_dict()`` call, directly or through a name
    it binds first (``state = {"state_dict": model.state_dict(), ...}; return state``,
    pytorch-original-transformer's ``get_training_state``, held-out 98)."""
    built: set[str] = set()
    returned: list[ast.expr] = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and _has_state_dict_call(n.value):
            built.update(t.id for t in n.targets if isinstance(t, ast.Name))
        elif isinstance(n, ast.Return) and n.value is not None:
            returned.append(n.value)
    return any(
        _has_state_dict_call(v) or (isinstance(v, ast.Name) and v.id in built) for v in returned
    )


def _has_state_dict_call(node: ast.AST) -> bool:
    return any(isinstance(c, ast.Call) and method_name(c) == "state_dict" for c in ast.walk(node))


def workspace_state_builder(model: ScriptModel, call: ast.Call) -> str | None:
    """``utils.get_training_state(cfg, model)``: a function of another module of the project
    that returns a value built from the model's ``.state_dict()`` (read, never run); how the
    script names it, or None."""
    helper = helper_target(model, call)
    if helper is None:
        return None
    parsed = parsed_module(helper.path)
    fn = parsed.functions.get(helper.function) if parsed is not None else None
    return helper.shown if fn is not None and returns_state_dict(fn) else None


COPIES = frozenset({"copy.deepcopy", "copy.copy"})


def _entries_stored(model: ScriptModel, name: ast.Name) -> list[ast.expr]:
    """The values stored as ``name[key] = value`` in the function around ``name``."""
    scope = model.enclosing_function(name) or model.tree
    return [
        n.value
        for n in model.walk_scope(scope)
        if isinstance(n, ast.Assign)
        and any(
            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name.id
            for t in n.targets
        )
    ]


def _is_state_dict(model: ScriptModel, node: ast.AST | None, depth: int = 0) -> bool:
    """A ``.state_dict()`` call, a dict holding one (a literal, ``dict(...)``,
    ``asdict(...)`` of a dataclass holding one), a list or tuple literal holding one, or a
    name assigned one."""
    if node is None or depth > 4:
        return False
    if isinstance(node, ast.Call):
        if method_name(node) == "state_dict":
            return True
        if _builds_state_dict(model, node):
            return True
        name = model.call_name(node)
        if name in ASDICT and len(node.args) == 1:
            return _is_state_dict(model, node.args[0], depth + 1)
        if name in COPIES and len(node.args) == 1:
            # ``args.ema_dict = copy.deepcopy(model.state_dict())`` (an EMA of the weights,
            # held-out 51's minimal-diffusion): the same device tensors, copied.
            return _is_state_dict(model, node.args[0], depth + 1)
        builtin_dict = isinstance(node.func, ast.Name) and node.func.id == "dict"
        if (builtin_dict and name is None) or _dataclass(model, node) is not None:
            values = [*node.args, *(kw.value for kw in node.keywords)]
            return any(_is_state_dict(model, v, depth + 1) for v in values)
        return False
    if isinstance(node, ast.Dict):
        return any(_is_state_dict(model, v, depth + 1) for v in node.values)
    if isinstance(node, ast.List | ast.Tuple):
        # ``states = [model.state_dict(), optimizer.state_dict(), epoch, step]`` (held-out
        # 174's ddim): xm.save writes a list back as a list (a tuple as a list: review).
        return any(_is_state_dict(model, v, depth + 1) for v in node.elts)
    if isinstance(node, ast.Name):
        param = parameter_of(model, node)
        if param is not None:
            # save_checkpoint(state, filename): what every caller passes as ``state``.
            values = argument_values(model, *param)
            return bool(values) and all(_is_state_dict(model, v, depth + 1) for v in values)
        if any(_is_state_dict(model, v, depth + 1) for v in model.assigned_from(node.id)):
            return True
        # ``snapshot = {}`` then ``snapshot["MODEL_STATE"] = model.module.state_dict()``
        # (held-out 54's torchrun trainer): filled entry by entry in the same function.
        return any(_is_state_dict(model, v, depth + 1) for v in _entries_stored(model, node))
    if isinstance(node, ast.Attribute) and (text := dotted(node)) is not None:
        values = attribute_values(model).get(text, [])
        return any(_is_state_dict(model, v, depth + 1) for v in values)
    return False


def _fix(model: ScriptModel, call: ast.Call) -> Fix | None:
    """Swap the function; ``obj=``/``f=`` become positions (xm.save names them differently).
    None for the other torch.save options, which xm.save does not take."""
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > 2:
        return None
    e = Emitter(model)
    ops: list[EditOp] = [Replace(model.span(call.func), f"{e.xm}.save")]
    if call.keywords:
        if any(kw.arg not in POSITIONS for kw in call.keywords):
            return None
        args = [model.segment(a) for a in call.args]
        by_name = sorted(call.keywords, key=lambda kw: POSITIONS[kw.arg])  # type: ignore[index]
        args += [model.segment(kw.value) for kw in by_name]
        ops.append(SetArgs(model.span(call), ", ".join(args)))
    title = f"Replace with {e.xm}.save"
    path = arg_or_keyword(call, 1, "f")
    if _mentions_rank(model, path):
        # One file per replica: xm.save writes on the master only unless told otherwise.
        if call.keywords:
            ops[-1] = SetArgs(model.span(call), ops[-1].code + ", master_only=False")  # type: ignore[union-attr]
        else:
            ops.append(SetKeyword(model.span(call), "master_only", "False"))
        title = f"Replace with {e.xm}.save(..., master_only=False) (one file per replica)"
    return Fix(title, (*ops, *e.imports))


def _mentions_rank(model: ScriptModel, node: ast.AST | None) -> bool:
    if node is None:
        return False
    return per_replica_path(model, node) or names_matching(node, RANKISH)


def _rank_guard(model: ScriptModel, call: ast.Call, depth: int = 0) -> ast.If | None:
    """The ``if rank == 0:`` (``if master_process:``...) the save runs under, if any: around
    it, or around a call of the helper function it is in (``save_checkpoint(...)``)."""
    for a in model.ancestors(call):
        if isinstance(a, ast.If) and _mentions_rank(model, a.test):
            return a
        if isinstance(a, SCOPE_TYPES):
            if depth > 2 or not isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef):
                return None
            for site in model.calls:
                if model.steps.callee(site) is a:
                    guard = _rank_guard(model, site, depth + 1)
                    if guard is not None:
                        return guard
            return None
    return None


def _review(model: ScriptModel, call: ast.Call, ctx: RuleContext) -> str:
    """Why swapping in xm.save could change what the script does here ("" when it can't)."""
    if ctx.target == "legacy" and model.is_distributed:
        guard = _rank_guard(model, call)
        if guard is not None:
            return (
                f"torch_xla 1.x's xm.save waits for every replica at a rendezvous, but this "
                f"save runs only under the rank check on line {line_ref(guard.lineno)}: the other "
                "replicas never arrive and the run hangs; call xm.save on every replica "
                "instead (it writes on the master only)"
            )
    state = _tuple_state(model, arg_or_keyword(call, 0, "obj"))
    if state is not None:
        return (
            f"the checkpoint holds `{state}`, a random state (Python's and NumPy's are tuples): "
            "xm.save rebuilds the containers it saves and tuples come back as lists "
            "(measured on torch_xla 2.9), which random.setstate refuses (TypeError); keep "
            "torch.save for that entry, or turn it back into a tuple where it is loaded"
        )
    obj = arg_or_keyword(call, 0, "obj")
    if obj is not None:
        saved: list[ast.AST] = [obj]
        if isinstance(obj, ast.Name):
            saved += model.assigned_from(obj.id) + _entries_stored(model, obj)
        rebuilt = walker_crash_reason(model, saved) or rebuilt_container_reason(model, saved)
        if rebuilt:
            return rebuilt
    path = arg_or_keyword(call, 1, "f")
    if (
        isinstance(path, ast.Name)
        and model.is_distributed
        and _in_memory(model, path)
        and not _mentions_rank(model, path)
        and _rank_guard(model, call) is None
    ):
        return (
            f"`{path.id}` is an in-memory buffer: xm.save writes only on the "
            "master ordinal, so on every other replica it stays empty while the code goes "
            "on to use it; write it on the master only, or keep torch.save with the tensors "
            "moved to the CPU"
        )
    return ""


def _tuple_state(model: ScriptModel, obj: ast.AST | None, depth: int = 0) -> str | None:
    """A random-state getter's result among what is saved (held-out 56, tabular-dl's
    ``zero.get_random_state()`` in its checkpoint), written in the call or in the dict it
    saves; its text, or None."""
    if obj is None or depth > 2:
        return None
    values: list[ast.AST] = [obj]
    if isinstance(obj, ast.Name):
        values += model.assigned_from(obj.id) + _entries_stored(model, obj)
    for value in values:
        for n in ast.walk(value):
            if not isinstance(n, ast.Call):
                continue
            name = (dotted(n.func) or "").rpartition(".")[2].lower()
            if name.startswith("torch") or "rng" in name:
                continue
            if name in ("getstate", "get_state") or "random_state" in name:
                return model.segment(n)
    return None


def _in_memory(model: ScriptModel, node: ast.Name) -> bool:
    """A name bound to ``io.BytesIO()``: a destination the replica reads back itself."""
    values = model.assigned_from(node.id)
    return any(isinstance(v, ast.Call) and model.call_name(v) in BUFFERS for v in values)


def _module_finding(model: ScriptModel, call: ast.Call, obj: ast.AST) -> Finding:
    """``torch.save(model, f)``, or a dict holding a module and no state dict."""
    name = model.segment(obj)
    what = f"the whole module `{name}`"
    if not placed_module(model, obj):
        held = [h for h in held_on_device(model, obj) if placed_module(model, h.node)]
        name, what = held[0].text, f"a checkpoint holding the module `{held[0].text}`"
        if isinstance(held[0].node, ast.Call):
            # ``deepcopy(ema.ema).half()``: the advice names the module it copies.
            base = copied_from(model, held[0].node)
            name = model.segment(base) if base is not None else name
    return Finding(
        CODE,
        f"torch.save of {what}: after conversion its parameters are XLA "
        "tensors, so the file loads only where torch_xla is installed (or with map_location='cpu'), and xm.save does not "
        "help (it moves plain tensors to the CPU but leaves nn.Parameter on the device)",
        model.span(call),
        Severity.WARNING,
        manual=f"Save `{name}.state_dict()` with xm.save and load it with "
        f"`{name}.load_state_dict(torch.load(path))`; or, to keep a whole-module file, save a "
        f"CPU copy (`copy.deepcopy({name}).cpu()`) and move what torch.load returns to the "
        "device. Either way the code that loads the file changes too.",
    )


def _data_finding(model: ScriptModel, call: ast.Call, moved: ast.AST) -> Finding:
    """``torch.save(data, f)`` of device tensors that are no state dict (held-out 8 H9).
    No fix: xm.save alone would leave what torch.load returns on the CPU (measured: torch.save
    then torch.load gives xla:0, xm.save then torch.load gives cpu), so the code that loads
    the file changes too, which a swap of the save cannot do."""
    loads = [c.lineno for c in model.calls_to("torch.load")]
    where = f" (line {line_refs(loads)})" if loads else ""
    own_file = per_replica_path(model, arg_or_keyword(call, 1, "f"))
    # One file per replica: xm.save's default writes on the master only.
    save = "xm.save(data, path, master_only=False)" if own_file else "xm.save(data, path)"
    return Finding(
        CODE,
        f"torch.save of tensors on the device (moved at line {line_ref(moved.lineno)}, "  # type: ignore[attr-defined]
        f"`{model.segment(moved)[:60]}`): after conversion they are XLA tensors, which "
        "torch.save pickles as XLA tensors (the file loads only where torch_xla is "
        "installed); xm.save moves them to the CPU first and writes on the master ordinal "
        f"only{', unless given master_only=False' if own_file else ''}",
        model.span(call),
        Severity.WARNING,
        manual=(
            f"Save with {save} (same arguments"
            f"{'; the path names the replica, so each keeps its own file' if own_file else ''}"
            f"), and move what torch.load returns{where} to the device after loading: xm.save writes CPU tensors, so the "
            "reloaded data is no longer on the device. Or keep torch.save if the file is only "
            "ever reloaded where torch_xla is installed."
        ),
    )


def _holds_placed_module(model: ScriptModel, obj: ast.AST | None) -> bool:
    if obj is None:
        return False
    return placed_module(model, obj) or any(
        placed_module(model, h.node) for h in held_on_device(model, obj)
    )


def _held_message(held: list[Held]) -> str:
    return (
        "checkpoint with torch.save: xm.save writes on the master ordinal only and moves "
        f"plain tensors to the CPU, but not those of {describe(held)}: their nn.Parameters "
        "stay XLA tensors in the file"
    )


def _held_reason(held: list[Held]) -> str:
    return (
        f"xm.save copies only plain torch.Tensor values to the CPU: {describe(held)} keeps "
        "its nn.Parameters as XLA tensors, so the file still loads only where torch_xla is "
        f"installed; {advice(held)}. The code that loads the file changes too"
    )


def is_checkpoint(model: ScriptModel, obj: ast.AST | None) -> bool:
    """What ``torch.save`` writes is a state-dict checkpoint, or a whole module on a device,
    alone or in a dict (``{'net': net, 'acc': acc}``: held-out 20, mixup-cifar10)."""
    return _is_state_dict(model, obj) or (
        obj is not None and (placed_module(model, obj) or _holds_placed_module(model, obj))
    )


SCHEDULER_FACTORIES = ("_schedule_with_warmup", "get_scheduler", "create_scheduler")


def _scheduler_state(model: ScriptModel, obj: ast.AST | None) -> bool:
    """``scheduler.state_dict()`` of a name every assignment binds to an LR scheduler
    (``torch.optim.lr_scheduler.*``, transformers' ``get_linear_schedule_with_warmup``):
    its state is step counts and learning rates (held-out 82's BERT-NER)."""
    if not (
        isinstance(obj, ast.Call)
        and method_name(obj) == "state_dict"
        and isinstance(owner := obj.func.value, ast.Name)  # type: ignore[attr-defined]
    ):
        return False
    values = model.assigned_from(owner.id)
    return bool(values) and all(
        isinstance(v, ast.Call)
        and (
            (name := model.call_name(v) or "").startswith("torch.optim.lr_scheduler.")
            or name.endswith(SCHEDULER_FACTORIES)
        )
        for v in values
    )


def _beside_xm_save(model: ScriptModel, call: ast.Call) -> bool:
    """The function around ``call`` also saves with ``xm.save`` (imported, or handed in as
    ``self.xm``: held-out 82's TPU-Star saves the model with ``self.xm.save`` and its metrics
    with ``torch.save``): an author who knows xm.save chose torch.save here."""
    scope = model.enclosing_function(call)
    if scope is None:
        return False
    saves: dict[int, list[ast.Call]] = model.memo(_beside_xm_save, dict)
    if id(scope) not in saves:
        handed = set(injected_xla_calls(model))
        saves[id(scope)] = [
            n
            for n in ast.walk(scope)
            if isinstance(n, ast.Call)
            and (
                model.call_name(n) == "torch_xla.core.xla_model.save"
                or (n in handed and n.func.attr == "save")  # type: ignore[attr-defined]
            )
        ]
    around = set(map(id, model.ancestors(call)))
    for n in saves[id(scope)]:
        # On the same path: not the XLA side of a switch whose other side is this save.
        stmt = model.enclosing_statement(n)
        parent = model.parent(stmt) if stmt is not None else None
        if parent is None or id(parent) not in around:
            continue
        block = next(
            (
                b
                for f in ("body", "orelse", "finalbody", "handlers")
                if stmt in (b := getattr(parent, f, None) or [])
            ),
            [],
        )
        if any(s is call or id(s) in around for s in block):
            return True
    return False


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from helper_save_findings(model, ctx, CODE, _is_state_dict)
    yield from trainer_model_saves(model, CODE)
    yield from device_model_saves(model, CODE)
    yield from safetensors_state_saves(model, CODE)
    for call in model.calls_to("torch.save"):
        obj = arg_or_keyword(call, 0, "obj")
        if not _is_state_dict(model, obj):
            if _holds_placed_module(model, obj):
                yield _module_finding(model, call, obj)  # type: ignore[arg-type]
            elif (moved := device_data(model, obj)) is not None:
                yield _data_finding(model, call, moved)
            continue
        if copied_to_cpu(model, call, obj):
            continue  # its entries are CPU copies already: the file loads anywhere
        if _scheduler_state(model, obj):
            continue  # an LR scheduler's state: Python numbers, no device tensor
        if _beside_xm_save(model, call):
            continue  # the function saves with xm.save too: this torch.save is the author's choice
        moved = module_moved_to_cpu(model, obj)
        if moved is not None and nothing_trains_after(model, call):
            continue  # the final save of a module moved to the CPU: a CPU file, no step after
        held = held_on_device(model, obj)
        fix = _fix(model, call)
        if fix is not None:
            reasons = [
                r
                for r in (
                    _review(model, call, ctx),
                    held and _held_reason(held),
                    resumed_entry_reason(model, call),
                    _built_elsewhere_reason(model, obj),
                )
                if r
            ]
            if moved is not None:
                fix = Fix(
                    f"{fix.title}, without moving the module",
                    (*fix.ops, Replace(model.span(moved), model.segment(moved.func.value))),  # type: ignore[attr-defined]
                )
                reasons.append(MOVED_REASON.format(module=model.segment(moved.func.value)))  # type: ignore[attr-defined]
            if reasons:
                fix = Fix(fix.title, fix.ops, safe=False, review_reason="; ".join(reasons))
        message = (
            _held_message(held)
            if held
            else "checkpoint with torch.save: xm.save moves the XLA tensors to the CPU and "
            "writes on the master ordinal only"
        )
        if moved is not None:
            message += "; " + MOVED_MESSAGE.format(call=model.segment(moved))
        yield Finding(
            CODE,
            message,
            model.span(call),
            Severity.WARNING,
            fix=fix,
            manual=None
            if fix is not None
            else "xm.save(data, path) takes no pickle options: drop them and call xm.save",
        )


def _built_elsewhere_reason(model: ScriptModel, obj: ast.AST | None) -> str:
    """What a helper of another module returns is out of this check's sight: xm.save copies
    it into plain containers (an OrderedDict becomes a dict, a tuple a list) and refuses
    objects it cannot copy (an OmegaConf config, a class), measured at stop 42."""
    shown = workspace_state_builder(model, obj) if isinstance(obj, ast.Call) else None
    if shown is None:
        return ""
    return (
        f"what `{shown}()` returns is built in another module: xm.save rebuilds its "
        "containers as plain dicts and lists and refuses objects it cannot copy (a config "
        "object, a class); check it holds only tensors, numbers, strings and containers"
    )


HOVER = """\
**XLA108 · torch.save checkpoint → xm.save**

A state dict of a model on XLA holds XLA tensors. `xm.save(data, path)` moves them to the
CPU first and writes on the master ordinal only (`master_only=True`), so in a multi-replica
run one process writes the file.

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `xm.save(model.state_dict(), path)` (`import torch_xla.core.xla_model as xm`) |
| legacy (1.13, SageMaker Training Compiler) | `xm.save(model.state_dict(), path)` |

Fix: `torch.save` → `xm.save`, arguments kept. torch.save's pickle options have no
`xm.save` equivalent.
"""

RULE = Rule(
    code=CODE,
    name="xm-save",
    category=Category.CONVERSION,
    summary="torch.save(model.state_dict(), path) → xm.save(...) (CPU copy, master ordinal only)",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={"torch.save": HOVER, "torch_xla.core.xla_model.save": HOVER},
)
