"""XLA106: a distributed training loop iterates a plain DataLoader.

On XLA the batches must be moved to the device ahead of the step and each iteration
must end in a sync; ``pl.MpDeviceLoader`` does both. The wrap is safe only when the device
it passes is the XLA device once the safe fixes are in (``device_after_fixes``): with a CPU or
CUDA device the loader fails at the first batch. Whether this rule wraps a loop with a safe fix
is also what XLA107 uses to stay silent on it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ..semantic import device_sites, xla_api
from ..semantic.device_datasets import placed_dataset
from ..semantic.device_intent import finished_on_xla, hand_written_xla, places_on_a_device
from ..semantic.line_refs import line_ref
from ..semantic.loaders import (
    DATALOADERS,
    Source,
    classify,
    is_counter,
    iterated_loader,
    passed_in_loader,
)
from ..semantic.loop_frames import batch_names
from ..semantic.loop_syncs import loop_syncs, written_for_xla
from ..semantic.model import Emitter, ScriptModel, TrainingLoop, dotted, method_name
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity, Target
from .parts.device_after_fixes import device_not_xla, value_not_xla
from .parts.final_fixes import applied_spans

CODE = "XLA106"
REVIEW_PARAMETER = (
    "the loader comes from outside this function ({name}); if a caller already wraps it in "
    "pl.MpDeviceLoader, wrapping it again breaks training (the loader thread fails and no "
    "step runs, with exit code 0)"
)
REVIEW_BUILT_BY = (
    "the loader comes from `{call}` (line {line}), whose body this file does not show; if it "
    "already wraps it in pl.MpDeviceLoader, wrapping it again breaks training (the loader "
    "thread fails and no step runs, with exit code 0)"
)
REVIEW_LIBRARY = (
    "the loader is `{call}` (line {line}), another library's loader{placed}, not a torch "
    "DataLoader: check that pl.MpDeviceLoader can iterate it and that its batches are plain "
    "tensors on the CPU"
)
REVIEW_WRAPPER = (
    "`{wrapper}(...)` now receives device batches from the MpDeviceLoader inside it; check "
    "that it only passes them on (timing, logging) and does not read or reshape them"
)
REVIEW_UNPLACED = (
    "nothing in this script places the model on a device (XLA117): the wrap would put the "
    "batches on the XLA device while the model stays on the CPU, and the first step fails "
    '("Expected XLA tensor"); place the model on the device first'
)
REVIEW_HOST_READ = (
    "line {line} reads the batch on the host (`{read}`): the CPU batch now comes from the "
    "MpDeviceLoader already on the XLA device, so that read compiles and runs a graph of "
    "its own on every step (an extra device sync each time: a held-out script ran 14 "
    "executions for 5 steps instead of 5); keep the check on the CPU data or drop it before wrapping"
)
HOST_READS = frozenset({"item", "tolist", "numpy"})
# Methods that hand the tensor on as it is (a copy, a view): reading their result off a
# device batch copies the uploaded data, it runs no computation.
PASSTHROUGH = frozenset({"detach", "cpu", "clone", "contiguous", "numpy", "item", "tolist"})
REVIEW_DEVICE = (
    "pl.MpDeviceLoader needs the XLA device, and {why}: with a CPU or CUDA device every run "
    'fails at the first batch ("Check failed: device.type() == at::kXLA"); convert the '
    "device first"
)

REVIEW_PLACED_DATASET = (
    "the dataset `{dataset}` already puts its samples on the device (`{placement}`, line "
    "{line}): after conversion they are XLA tensors, and pl.MpDeviceLoader's loader thread "
    'fails on them ("Check failed: data()->tensor_data", measured); keep the dataset\'s '
    "tensors on the CPU (drop that move) and let the MpDeviceLoader move each batch"
)


@dataclass(frozen=True)
class Wrap:
    loader: ast.expr
    code: str
    ops: tuple
    safe: bool
    reason: str
    plain: bool = True  # a torch DataLoader built in sight


def _unseen_origin(model: ScriptModel, loader: ast.expr) -> str | None:
    """``train_loader, val_loader = model.dataloaders(...)`` in this function (held-out 102's
    simclr-pytorch): the loader comes from a call, not from a caller; said as such."""
    fn = model.enclosing_function(loader)
    if not isinstance(loader, ast.Name) or fn is None:
        return None

    def bound_in(scope: ast.AST) -> list[ast.expr]:
        return [
            node.value
            for node in model.walk_scope(scope)
            if isinstance(node, ast.Assign)
            and any(
                isinstance(t, ast.Name) and t.id == loader.id
                for target in node.targets
                for t in ast.walk(target)
            )
        ]

    calls = bound_in(fn)
    while not calls and (outer := model.enclosing_function(fn)) is not None:
        fn, calls = outer, bound_in(outer)  # a closure's loader (ResNeSt's ``def train``)
    # A DataLoader built there and then handed through a helper (``criterion, train_loader =
    # get_criterion(cfg, train_loader, gpu)``, held-out 124): the helper is the origin.
    unknown = [
        c for c in calls if not (isinstance(c, ast.Call) and model.call_name(c) in DATALOADERS)
    ]
    if len(unknown) == 1 and len(calls) > 1 and isinstance(unknown[0], ast.Call):
        call = unknown[0]
        return REVIEW_BUILT_BY.format(call=f"{model.segment(call.func)}(...)", line=call.lineno)
    if len(calls) != 1 or not isinstance(calls[0], ast.Call):
        return None
    call = calls[0]
    if any(isinstance(n, ast.Name) and n.id == loader.id for n in ast.walk(call)):
        return None  # ``itertools.islice(loader, n)`` of a loader handed in: the caller's
    if model.call_name(call) is not None:
        # graphlearn_torch's ``glt.loader.NeighborLoader(..., device=current_device)``
        # (held-out 123): built right here by a library, not handed in by a caller.
        placed = any(k.arg == "device" for k in call.keywords)
        return REVIEW_LIBRARY.format(
            call=f"{model.segment(call.func)}(...)",
            line=call.lineno,
            placed=" and places its batches itself (`device=`)" if placed else "",
        )
    return REVIEW_BUILT_BY.format(call=f"{model.segment(call.func)}(...)", line=call.lineno)


def _plan(model: ScriptModel, target: Target, loop: TrainingLoop) -> Wrap | None:
    """How XLA106 wraps this loop's loader, or None when it leaves the loop alone."""
    loader = iterated_loader(model, loop.node)
    if is_counter(model, loader):
        # ``for _ in range(len(loader)):`` counts the steps; the batches come from elsewhere
        # (a prefetcher's ``next()``: YOLOX), never from what ``range`` is given.
        return None
    source = classify(model, loader)
    if loader is None or source in (Source.XLA, Source.NONE):
        return None
    if source is Source.UNKNOWN and isinstance(loader, ast.Name):
        loader = _bound_wrapper(model, loader, loop.node) or loader
    wrapper = _wrapping_generator(model, loader) if source is Source.UNKNOWN else None
    if wrapper is not None:
        # ``metric_logger.log_every(loader, 10)``: a generator running its own code around
        # each item (timers, logging after the step). Wrapped whole, the MpDeviceLoader's
        # thread would drain it ahead of the steps (every log line printed before the step
        # it reports: held-out 10 r4); the loader inside it is wrapped instead.
        loader = wrapper.args[0]
        source = classify(model, loader)
        if source in (Source.XLA, Source.NONE):
            return None
    name = model.segment(loader)
    if (
        (hand_written_xla(model) or written_for_xla(model))
        and loop_syncs(model, loop)
        and _moves_its_batches(model, loop.node)
    ):
        # cift-markets' single-device TPU loop (held-out 107's control): it moves its
        # batches and ends each step in xm.mark_step() itself; the loader would only
        # overlap the copies, which is the author's call, not a conversion step.
        return None
    if source is Source.UNKNOWN:
        if "loader" not in name.lower():
            return None
        # A file written for XLA whose loop relies on its loader to sync, over a loader
        # handed in from another module: that caller passes a pl.MpDeviceLoader (the
        # pytorch/xla examples do). Wrapping it again would break training. A script on the
        # XLA device with its loop running and no CUDA left counts too (see XLA107).
        if (written_for_xla(model) or finished_on_xla(model)) and passed_in_loader(model, loader):
            if not loop_syncs(model, loop):
                return None
    e = Emitter(model)
    device = device_ref_at(model, e, target, loop.node)
    code = f"{e.pl}.MpDeviceLoader({name}, {device})"
    reasons = []
    if source is not Source.PLAIN:
        reasons.append(_unseen_origin(model, loader) or REVIEW_PARAMETER.format(name=name))
    if wrapper is not None:
        reasons.append(REVIEW_WRAPPER.format(wrapper=model.segment(wrapper.func)))
    read = _batch_read_on_host(model, loop.node)
    if read is not None:
        reasons.append(
            REVIEW_HOST_READ.format(line=line_ref(read.lineno), read=model.segment(read)[:60])
        )
    why = device_not_xla(model, target, device, loop.node)
    if why:
        reasons.append(REVIEW_DEVICE.format(why=why))
    elif not (places_on_a_device(model) or hand_written_xla(model)):
        reasons.append(REVIEW_UNPLACED)
    if not why and (moved := _batch_move_off_xla(model, target, loop.node)) is not None:
        reasons.append(moved)
    if (placed := placed_dataset(model, loader)) is not None:
        dataset, placement = placed
        reasons.append(
            REVIEW_PLACED_DATASET.format(
                dataset=model.segment(dataset)[:60],
                placement=model.segment(placement)[:60],
                line=line_ref(placement.lineno),  # type: ignore[attr-defined]
            )
        )
    ops = (Replace(model.span(loader), code), *e.imports)
    return Wrap(loader, code, ops, not reasons, "; ".join(reasons), source is Source.PLAIN)


REVIEW_MOVED_BACK = (
    "line {line} moves each batch on to `{device}`, which is not the XLA device after the safe "
    "fixes ({why}): the wrapped loader would copy every batch to the XLA device and the loop "
    "back off it; accept that device's fix first"
)


def _batch_move_off_xla(model: ScriptModel, target: Target, loop: ast.AST) -> str | None:
    """``images.to(self.device)`` in the loop, with ``self.device`` left CPU/CUDA by a device
    choice that waits for review (held-out 108's awesome-semantic-segmentation trainer)."""
    names = set(batch_names(model, loop)) if isinstance(loop, ast.For | ast.AsyncFor) else set()
    for n in model.walk_scope(loop):
        if not (
            isinstance(n, ast.Call)
            and method_name(n) == "to"
            and isinstance(n.func, ast.Attribute)
            and dotted(n.func.value) in names
            and n.args
        ):
            continue
        why = _known_not_xla(model, target, n.args[0], loop)
        if why:
            shown = model.segment(n.args[0])
            return REVIEW_MOVED_BACK.format(line=line_ref(n.lineno), device=shown, why=why)
    return None


def _known_not_xla(model: ScriptModel, target: Target, device: ast.expr, loop: ast.AST) -> str:
    """Why ``device`` is seen to stay CPU/CUDA after the safe fixes: a name bound to such a
    value, or ``self.device`` stored so in the class. A device xla-lens cannot follow is no
    evidence (the wrap stays as safe as it was)."""
    if isinstance(device, ast.Name):
        why = device_not_xla(model, target, device.id, loop)
        return why if why.startswith("line ") else ""
    if not (
        isinstance(device, ast.Attribute)
        and isinstance(device.value, ast.Name)
        and device.value.id == "self"
    ):
        return ""
    owner = next((a for a in model.ancestors(loop) if isinstance(a, ast.ClassDef)), None)
    if owner is None:
        return ""
    for node in ast.walk(owner):
        if (
            isinstance(node, ast.Assign)
            and any(model.segment(t) == model.segment(device) for t in node.targets)
            and (why := value_not_xla(model, target, node.value))
        ):
            return why
    return ""


def _moves_its_batches(model: ScriptModel, loop: ast.AST) -> bool:
    """Every name the loop binds from its loader is moved in the loop (``data.to(device)``)."""
    names = set(batch_names(model, loop)) if isinstance(loop, ast.For | ast.AsyncFor) else set()
    moved = {
        dotted(n.func.value)
        for n in model.walk_scope(loop)
        if isinstance(n, ast.Call) and method_name(n) == "to" and isinstance(n.func, ast.Attribute)
    }
    return bool(names) and names <= moved


def _batch_read_on_host(model: ScriptModel, loop: ast.AST) -> ast.Call | None:
    """``assert images.max().item() <= 1`` on the batch the loop gets, before anything binds
    that name again (held-out 51, minimal-diffusion): a host read of CPU data today, a device
    sync per step once the loader hands device batches."""
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return None
    names = set(batch_names(model, loop))
    if not names:
        return None
    rebound: dict[str, int] = {}
    for node in model.walk_scope(loop):
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Store):
            if node.lineno > loop.lineno:
                rebound[node.id] = min(rebound.get(node.id, node.lineno), node.lineno)
    reads = [
        n
        for n in model.walk_scope(loop)
        if isinstance(n, ast.Call) and method_name(n) in HOST_READS
    ]
    for node in sorted(reads, key=lambda n: (n.lineno, n.col_offset)):
        root = node.func.value  # type: ignore[attr-defined]
        computes = False
        while isinstance(root, ast.Call | ast.Attribute | ast.Subscript):
            if isinstance(root, ast.Call):
                computes = computes or method_name(root) not in PASSTHROUGH
                root = root.func
            else:
                root = root.value
        if not computes:
            continue  # ``boxes.cpu().numpy()``: a copy of the uploaded batch, no graph to run
        if (
            isinstance(root, ast.Name)
            and root.id in names
            and node.lineno < rebound.get(root.id, 10**9)
            and node.lineno > loop.lineno
        ):
            return node
    return None


def _bound_wrapper(model: ScriptModel, name: ast.Name, loop: ast.AST) -> ast.Call | None:
    """``epoch_iterator = tqdm(train_loader, ...)`` then ``for batch in epoch_iterator:``
    (held-out 20, ViT-pytorch): the one call the loop's function binds the name to, when it
    wraps a loader, so the loader inside it is wrapped (the progress bar keeps pace with the
    steps) and the name keeps its other uses (``epoch_iterator.set_description(...)``)."""
    fn = model.enclosing_function(loop)
    bound = [
        a.value
        for a in model.assignments.get(name.id, ())
        if isinstance(a, ast.Assign) and model.enclosing_function(a) is fn
    ]
    if len(bound) != 1 or not isinstance(bound[0], ast.Call):
        return None
    return _wrapping_generator(model, bound[0])


def _wrapping_generator(model: ScriptModel, loader: ast.expr) -> ast.Call | None:
    """``log_every(loader, 10)`` / ``metric_logger.log_every(data_loader, ...)``: a call (not a
    loader's constructor) whose first argument names a loader."""
    if not isinstance(loader, ast.Call) or not loader.args:
        return None
    first = loader.args[0]
    if isinstance(first, ast.Starred) or "loader" not in model.segment(first).lower():
        return None
    return loader


def _plans(model: ScriptModel, target: Target) -> dict[int, Wrap | None]:
    def compute() -> dict[int, Wrap | None]:
        if not model.is_distributed:
            return {}
        return {id(loop.node): _plan(model, target, loop) for loop in model.training_loops}

    return model.memo((CODE, target), compute)


def will_wrap(model: ScriptModel, loop: ast.AST, target: Target = "modern") -> bool:
    """True when Convert wraps this loop's loader (XLA107 then leaves the sync to the loader):
    the fix is safe and the engine applies it, i.e. the user did not silence it and launch
    safety does not hold it back (``final_fixes``; a wrap it holds back left the loop with no
    sync at all). Safety does not depend on the target: both name the XLA device."""
    plan = _plans(model, target).get(id(loop))
    if plan is None or not plan.safe:
        return False
    return model.span(plan.loader) in applied_spans(model, CODE, check, target)


def device_ref_at(model: ScriptModel, e: Emitter, target: Target, node: ast.AST) -> str:
    """A device variable visibly bound where ``node`` runs, else a device call."""
    fn = model.enclosing_function(node)
    var = model.device_variable
    if fn is not None:
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        for name in (var, "device", "dev", "xla_device"):
            if name is not None and name in params:
                return name
    return device_sites.device_ref_at(model, node) or xla_api.device(e, target)


def _uses_monai(model: ScriptModel) -> bool:
    return any(
        (a.name if isinstance(imp, ast.Import) else imp.module or "").split(".")[0] == "monai"
        for imp in model.import_nodes
        for a in imp.names
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    plans = _plans(model, ctx.target)
    for loop in model.training_loops:
        plan = plans.get(id(loop.node))
        if plan is None:
            continue
        what = "a plain DataLoader" if plan.plain else "its loader as it is"
        message = (
            f"distributed training loop iterates {what}: wrap it in "
            "pl.MpDeviceLoader so batches reach the XLA device ahead of each step and "
            "every iteration ends in a sync"
        )
        if _uses_monai(model):
            # MpDeviceLoader moves values whose type is exactly torch.Tensor: a subclass
            # passes through on the CPU (measured, torch_xla 2.9; held-out 70's BraTS trainer).
            message += (
                "; it moves only plain torch.Tensor values: MONAI's MetaTensor batches pass "
                "through on the CPU, so keep the script's own moves (`.to(device)`, ToDeviced)"
            )
        yield Finding(
            CODE,
            message,
            model.span(plan.loader),
            Severity.WARNING,
            fix=Fix(
                f"Wrap in {plan.code}",
                plan.ops,
                safe=plan.safe,
                review_reason=plan.reason,
            ),
        )


HOVER_LOADER = """\
**XLA106 · DataLoader → pl.MpDeviceLoader (distributed)**

On XLA each process iterates its loader through
`torch_xla.distributed.parallel_loader`: it uploads the next batches to the XLA device
while the current step runs and marks the step at every iteration (no `mark_step` needed).

Fix: `for batch in pl.MpDeviceLoader(train_loader, device):`

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `pl.MpDeviceLoader(loader, torch_xla.device())` |
| legacy (1.13) | `pl.MpDeviceLoader(loader, xm.xla_device())` or `pl.ParallelLoader(loader, [device]).per_device_loader(device)` |

`MpDeviceLoader` does not shard the data: keep a `DistributedSampler` (XLA203).
"""

RULE = Rule(
    code=CODE,
    name="device-loader",
    category=Category.DISTRIBUTED,
    summary="Distributed training loop iterates a plain DataLoader → wrap it in pl.MpDeviceLoader",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.utils.data.DataLoader": HOVER_LOADER,
        "torch.utils.data.dataloader.DataLoader": HOVER_LOADER,
        "torch_xla.distributed.parallel_loader.MpDeviceLoader": HOVER_LOADER,
        "torch_xla.distributed.parallel_loader.ParallelLoader": HOVER_LOADER,
    },
)
