"""XLA118: a call into a function of another workspace module that needs converting there.

``utils.init_distributed_mode(args)``, ``model = smart_DDP(model)``, ``device, ids =
prepare_device(n_gpu)``: the CUDA-only setup runs in a helper of another file of the project
(NCCL, ``torch.cuda.set_device``, DDP ``device_ids``, a CUDA device picker), so nothing in the
script shows it and converting the script alone leaves it on CUDA. The helper's module is
found through the script's imports (``semantic/workspace_calls.py``: read from disk, never
imported or run), and the conversion rules run over it; the findings inside the called
function (and the functions of its module it calls) are named at the call, with no fix: the
fix belongs in that file. Classes are followed too (``semantic/workspace_classes.py``):
``t = Trainer(model)`` names what ``Trainer.__init__`` runs, ``t.train()`` what the method runs
(an override in a subclass, ``super()``, the methods it calls on ``self``, in whichever files
they are). Each module's findings are cached by path, size and mtime, so the editor pays for
a module once.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ..semantic.cuda_branches import cuda_only_branch
from ..semantic.device_intent import hand_written_xla
from ..semantic.model import XLA_LOADERS, ScriptModel
from ..semantic.module_globals import global_reads
from ..semantic.parameter_defaults import passes
from ..semantic.training_loops import training_loop_of
from ..semantic.workspace import FunctionFacts
from ..semantic.workspace_calls import HelperTarget, helper_target, parsed_module
from ..semantic.workspace_classes import (
    ClassCall,
    bound_method_root,
    call_root,
    class_call,
    class_roots,
)
from ..semantic.workspace_factories import block_forwards, forward_of
from ..semantic.workspace_regions import regions
from ..semantic.xla_process_group import group_built_for
from .base import Category, Finding, Rule, RuleContext, Severity
from .parts import helper_evidence as evidence_cache
from .parts.device_parameters import passes_xla_device
from .parts.helper_backend import backend_literals
from .parts.helper_evidence import (
    GLOBAL_CODES,
    LOOP_SYNC,
    SUPPORTING,
    Evidence,
    _within,
    helper_evidence,
    module_evidence,
)
from .parts.imported_devices import imported_device_findings
from .parts.library_autocast import display_path, library_autocasts

CODE = "XLA118"
# Later calls of a helper already reported, each pointed at the first (information).
MAX_REPEATS = 5
# Distinct helper modules analysed for one script: the editor's cost stays bounded. Functions
# the script calls and the modules class calls reach each have this budget: a model's and a
# dataset's classes reaching a dozen modules of anchors and augmentations must not spend the
# one a checkpoint helper needs (pysot's ``load_pretrain``, held-out 100).
MAX_MODULES = 12
SHOWN = 3  # evidence lines named in the message; the rest are counted
DEVICE_NOTE = "it chooses the device there"


# Evidence that a process group makes right: dist.get_rank(), a DistributedSampler's defaults.
GROUP_ANSWERS = frozenset({"XLA202", "XLA203"})


def clear_cache() -> None:
    """Forget every helper module's evidence (``parts/helper_evidence``'s cache)."""
    evidence_cache.clear_cache()


def _reported_by_script_rules(
    model: ScriptModel, call: ast.Call, ctx: RuleContext, evidence: tuple[Evidence, ...]
) -> set[int]:
    """Lines of the helper that the script's own rules already name at this call (XLA101's
    picker of a sibling helper, XLA403's CUDA setup in one, XLA108's save helper): said
    once, by them."""
    from . import xla101_cuda_device as x101
    from . import xla108_xm_save as x108
    from .parts.checkpoint_helpers import helper_save_findings
    from .xla403_cuda_only_call import HELPER_EVIDENCE, HELPER_SETUP

    lines: set[int] = set()
    if isinstance(call.func, ast.Name):
        facts: FunctionFacts | None = model.steps.external(call)
        if facts is not None:
            if facts.cuda_picker_line and x101._gives_the_device(model, call):
                lines.add(facts.cuda_picker_line)
            if facts.nccl_line or any(q in HELPER_SETUP for q, _ in facts.cuda_calls):
                lines.update(line for q, line in facts.cuda_calls if q in HELPER_EVIDENCE)
                lines.add(facts.nccl_line)
    if any(e.code == "XLA108" for e in evidence):
        saves = model.memo(
            (CODE, "XLA108 helper saves", ctx.target),
            lambda: {
                id(f.span): f.span
                for f in helper_save_findings(model, ctx, "XLA108", x108._is_state_dict)
            },
        )
        if model.span(call) in saves.values():
            lines.update(e.line for e in evidence if e.code == "XLA108")
    return lines


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    return _check(model, ctx, once=True)


def _check(model: ScriptModel, ctx: RuleContext, once: bool) -> Iterator[Finding]:
    """With ``once``, each helper's evidence is said at its first call and later calls point
    there (what a person reads); without, every call gets its own (evidence for a caller one
    module up, where each function of this module counts apart)."""
    # A script a person wrote for XLA (torch_xla API the fixes never write) is quiet. Importing
    # torch_xla is not enough: after ``fix`` the script imports it too, and its helpers still
    # need converting (the summary of what is left must say so).
    if hand_written_xla(model) or not model.path or model.path.startswith("<"):
        return
    seen: set[object] = set()
    modules: set[str] = set()  # reached through class calls
    helper_modules: set[str] = set()  # of the functions the script calls
    said: set[tuple[Path, int]] = set()  # lines of class code already named at a call
    literals: set[int] = set()  # "nccl" literals already named
    first_calls: dict[tuple[str, str], tuple[ast.Call, str]] = {}
    repeats: dict[tuple[str, str], int] = {}
    # The method a class call ran -> the first call whose finding named its lines, its file.
    class_first: dict[int, tuple[ast.Call, str]] = {}
    class_repeats: dict[int, int] = {}  # pointers given per method
    roots = class_roots(model)  # most calls start with no name that reaches a class
    called_forwards: set[tuple[int, int]] | None = None
    for call in _training_calls_first(model):
        if cuda_only_branch(model, call, availability=False) is not None:
            continue  # never runs on an XLA host (``if device.type == "cuda" and ...:``)
        helper = helper_target(model, call)
        if helper is not None:
            yield from backend_literals(model, call, helper, literals, CODE)
        factory = _factory_call(model, call, roots) if helper is not None else None
        if helper is None or factory is not None:
            if factory is None and (
                not roots
                or (
                    call_root(call.func) not in roots
                    and bound_method_root(model, call.func) not in roots
                )
            ):
                continue
            found = factory or class_call(model, call)
            first_run = class_first.get(id(found.method)) if found is not None else None
            if (
                found is not None
                and (id(found.chain[0].node), id(found.method)) in seen
                and once
                and not factory
                and first_run is not None
                and first_run[0] is not call
                # Another function's call: one in the same function is seen with the first.
                and model.enclosing_function(call) is not model.enclosing_function(first_run[0])
                and found.method.name != "__init__"  # a constructor is said once
                and class_repeats.get(id(found.method), 0) < MAX_REPEATS
            ):
                # CMC's ``contrast(feat_q, feat_k)`` in train_moco after ``contrast(feat,
                # index)`` in train_ins, both running MemoryMoCo.forward (held-out 119):
                # pointed at the call that named its lines.
                class_repeats[id(found.method)] = class_repeats.get(id(found.method), 0) + 1
                yield _repeat_finding(model, call, model.segment(call.func), first_run)
                continue
            if found is not None and (id(found.chain[0].node), id(found.method)) not in seen:
                if once:
                    seen.add((id(found.chain[0].node), id(found.method)))
                else:
                    said = set()
                targets = [found]
                # One module up (``once`` off), a model built in ``__init__`` runs where the
                # caller's forward calls it (``self.stn(x)``): named there, not here.
                building = once and found.method.name == "__init__"
                forward = forward_of(found) if building else None
                if called_forwards is None and forward is not None:
                    called_forwards = _called_forwards(model, roots)
                if (
                    forward is not None
                    and called_forwards is not None
                    and (id(forward.chain[0].node), id(forward.method)) not in called_forwards
                ):
                    # The model a training script builds is called: what its forward runs
                    # (``.cuda()`` on a mask, a CUDA index) is said where it is built (LTH14
                    # mar's forward in models/mar.py, called from engine_mar.py, held-out 44).
                    seen.add((id(found.chain[0].node), id(forward.method)))
                    targets.append(forward)
                if targets[-1].method.name == "forward":
                    for block in block_forwards(targets[-1]):
                        if (id(block.chain[0].node), id(block.method)) not in seen:
                            seen.add((id(block.chain[0].node), id(block.method)))
                            targets.append(block)
                extra = _factory_region(helper) if factory is not None else []
                made = list(_class_finding(model, call, targets, ctx.target, modules, said, extra))
                first_run = class_first.get(id(found.method))
                if (
                    not made
                    and once
                    and not factory
                    and first_run is not None
                    and found.method.name != "__init__"  # a constructor is said once
                ):
                    # nanoChatGPT's second trainer class runs the same inherited
                    # ``self.setup_ddp()``, whose lines the first class's call named
                    # (held-out 109): pointed there, as a function helper's later calls are.
                    yield _repeat_finding(model, call, model.segment(call.func), first_run)
                    continue
                if made and not factory:
                    where = display_path(model.path, Path(found.owner.path))
                    class_first.setdefault(id(found.method), (call, where))
                yield from made
            continue
        key = (str(helper.path), helper.function)
        first = first_calls.get(key) if once else None
        if first is not None:
            # The fix is in one place, said at the first call that runs it; a later call
            # is pointed there (held-out 32: efficientdet's eval loader).
            if repeats.get(key, 0) < MAX_REPEATS and _evidence_at(
                model, call, ctx, helper_evidence(helper, ctx.target)
            ):
                repeats[key] = repeats.get(key, 0) + 1
                yield _repeat_finding(model, call, helper.shown, first)
            continue
        if key not in seen:
            if str(helper.path) not in helper_modules and len(helper_modules) >= MAX_MODULES:
                continue
            helper_modules.add(str(helper.path))
            seen.add(key)
        evidence = helper_evidence(helper, ctx.target)
        if not evidence:
            continue
        evidence = _evidence_at(model, call, ctx, evidence)
        if evidence:
            defined = helper.function if helper.function != helper.shown.rsplit(".", 1)[-1] else ""
            sited = [(helper.path, e) for e in evidence]
            first_calls[key] = (call, display_path(model.path, helper.path))
            yield _finding(model, call, helper.shown, defined, sited)
    yield from library_autocasts(model, CODE)
    if once:
        yield from imported_device_findings(model, CODE, ctx.target)


def _evidence_at(
    model: ScriptModel, call: ast.Call, ctx: RuleContext, evidence: tuple[Evidence, ...]
) -> tuple[Evidence, ...]:
    """The helper's sites this call runs: none the script's own rules report at the call,
    no parameter default the call overrides; empty unless one needs converting."""
    already = _reported_by_script_rules(model, call, ctx, evidence)
    kept = tuple(
        e
        for e in _for_this_caller(model, call, evidence)
        if e.line not in already
        and not (e.default_of and passes(call, *e.default_of))
        and not (e.device_of and passes_xla_device(model, call, *e.device_of))
    )
    if any(e.code in GROUP_ANSWERS for e in kept) and group_built_for(model, call):
        # With a process group up, torch.distributed's ranks and a DistributedSampler's
        # defaults answer right on the "xla" backend too.
        kept = tuple(e for e in kept if e.code not in GROUP_ANSWERS)
    return kept if any(e.code not in SUPPORTING for e in kept) else ()


def _for_this_caller(
    model: ScriptModel,
    call: ast.Call,
    evidence: tuple[Evidence, ...],
    path: Path | None = None,
) -> tuple[Evidence, ...]:
    """A helper's loop without a sync needs one unless this script's loaders sync it; a
    helper's step that no loop of its module runs is synced by this script's training loop
    that runs it (XLA107 places that sync here: held-out 47's inherited backward_pass)."""
    if not any(e.code == LOOP_SYNC for e in evidence):
        return evidence
    if (
        any(True for _ in model.calls_to(*XLA_LOADERS))
        or training_loop_of(model, call)
        or (path is not None and _looped_here(model, path))
    ):
        return tuple(e for e in evidence if e.code != LOOP_SYNC)
    return evidence


def _looped_here(model: ScriptModel, path: Path) -> bool:
    """A training loop of this script runs a step of the module at ``path``."""
    return any(
        Path(step.module) == path for loop in model.training_loops for step in loop.external_steps
    )


def _training_calls_first(model: ScriptModel) -> list[ast.Call]:
    """The script's calls, those of another module's training loop or step first: the module
    cap must not be spent on loss classes and data helpers before the call that trains
    (RepDistiller's ``train(epoch, ...)`` of helper/loops.py came after eight modules of
    losses and models, held-out 27)."""
    steps = model.steps
    trains = []
    others = []
    for call in model.calls:
        facts = steps.external(call) if isinstance(call.func, ast.Name | ast.Attribute) else None
        (trains if facts is not None and facts.kind in ("epoch", "step") else others).append(call)
    return trains + others


def _factory_call(model: ScriptModel, call: ast.Call, roots: frozenset[str]) -> ClassCall | None:
    """``resnet18(...)`` of a workspace module that returns ``ResNet(...)``: the model it
    builds, followed as its constructor is."""
    if not roots or call_root(call.func) not in roots:
        return None
    found = class_call(model, call)
    if found is None or found.method.name != "__init__" or forward_of(found) is None:
        return None  # a loader's factory stays a function: what it runs is its own
    return found


def _factory_region(helper: HelperTarget) -> list[tuple[Path, ast.AST]]:
    parsed = parsed_module(helper.path)
    node = parsed.functions.get(helper.function) if parsed is not None else None
    return [(helper.path, node)] if node is not None else []


def _class_finding(
    model: ScriptModel,
    call: ast.Call,
    targets: list[ClassCall],
    conversion: str,
    modules: set[str],
    said: set[tuple[Path, int]],
    extra: list[tuple[Path, ast.AST]] = (),  # type: ignore[assignment]
) -> Iterator[Finding]:
    """``Trainer(...)`` / ``trainer.train()``: the evidence in the bodies the call runs in
    other files (the method, what it calls on ``self`` and ``super()``, its module's
    functions; a built model's ``forward`` too), each line named at its first call only."""
    try:
        script = Path(model.path).resolve()
    except OSError:
        return
    ranges: dict[Path, list[tuple[int, int]]] = {}
    bodies: dict[Path, list[ast.AST]] = {}
    first = [*extra, *regions(targets[0])]
    then = [r for target in targets[1:] for r in regions(target) if r not in first]
    for path, region in [*first, *dict.fromkeys(then)]:
        ranges.setdefault(path, []).append((region.lineno, region.end_lineno or region.lineno))  # type: ignore[attr-defined]
        bodies.setdefault(path, []).append(region)
    # Lines only the built model's forward runs: whether the message names the forward.
    forward_only = {
        (path, line)
        for path, region in then
        for line in range(region.lineno, (region.end_lineno or region.lineno) + 1)  # type: ignore[attr-defined]
    }
    tops: dict[Path, list[tuple[int, int]]] = {}
    for path, found in bodies.items():
        parsed = parsed_module(path)
        if parsed is not None:  # the module-level ``device`` its methods place on
            tops[path] = global_reads(parsed.tree, found)
    sited: list[tuple[Path, Evidence]] = []
    for path, spans in ranges.items():
        try:
            if path.resolve() == script:
                continue  # the script's own code: its own rules read it
        except OSError:
            continue
        if str(path) not in modules and len(modules) >= MAX_MODULES:
            continue
        modules.add(str(path))
        for e in _for_this_caller(model, call, module_evidence(path, conversion).lines, path):
            if (path, e.line) in said:
                continue
            if _within(e, spans) or (e.code in GLOBAL_CODES and _within(e, tops.get(path, []))):
                sited.append((path, e))
    if not any(e.code not in SUPPORTING for _, e in sited):
        return
    said.update((path, e.line) for path, e in sited)
    by_forward = [(path, e.line) in forward_only for path, e in sited]
    named = [targets[0]] if not all(by_forward) else []
    if any(by_forward):
        named += targets[1:]
    yield _finding(model, call, targets[0].shown, _defined(named), sited)


def _defined(targets: list[ClassCall]) -> str:
    """Where the methods the call runs are defined, when the call does not say it (a
    constructor of the class itself says it; ``MAR(...)`` whose forward runs the code
    names ``MAR.forward``, and ``MAR.__init__ and MAR.forward`` when both do)."""
    parts = []
    for target in targets:
        method = target.method.name
        owners = [t.owner.name for t in (target, *target.alternatives)]
        if method == "__init__" and target.owner is target.chain[0] and len(targets) == 1:
            continue
        parts.append(" or ".join(f"{o}.{method}" for o in dict.fromkeys(owners)))
    return " and ".join(parts)


def _called_forwards(model: ScriptModel, roots: frozenset[str]) -> set[tuple[int, int]]:
    """(class, method) of the workspace models the script calls itself (``model(x)``): their
    forward is named at that call, not where the model is built."""
    out: set[tuple[int, int]] = set()
    if not roots:
        return out
    for call in model.calls:
        if isinstance(call.func, ast.Name) and call.func.id in roots:
            found = class_call(model, call)
            if found is not None and found.method.name == "forward":
                out.add((id(found.chain[0].node), id(found.method)))
    return out


def _finding(
    model: ScriptModel,
    call: ast.Call,
    shown_as: str,
    defined: str,
    sited: list[tuple[Path, Evidence]],
) -> Finding:
    files = list(dict.fromkeys(path for path, _ in sited))
    names = [display_path(model.path, path) for path in files]
    where = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    first = sorted(sited, key=lambda s: (s[1].rank, files.index(s[0]), s[1].line))[:SHOWN]
    first.sort(key=lambda s: (files.index(s[0]), s[1].line))
    shown = "; ".join(
        ("" if len(files) == 1 else f"{names[files.index(path)]} ")
        + f"line {e.line}: {e.what} ({e.code})"
        for path, e in first
    )
    more = f"; and {len(sited) - SHOWN} more there" if len(sited) > SHOWN else ""
    device = f"; {DEVICE_NOTE}" if any(e.code == "XLA101" for _, e in sited) else ""
    message = (
        f"{shown_as}(){f' ({defined})' if defined else ''} runs code in {where} that needs "
        f"converting for XLA: {shown}{more}{device}"
    )
    them = "itself" if len(files) == 1 else "themselves"
    manual = (
        f"Convert {where} {them} (`xla-lens check {' '.join(names)}` lists each site with its "
        "fix): the change belongs in that file, not at this call."
    )
    return Finding(CODE, message, model.span(call), Severity.WARNING, manual=manual)


def _repeat_finding(
    model: ScriptModel, call: ast.Call, shown_as: str, first: tuple[ast.Call, str]
) -> Finding:
    first_call, where = first
    line = model.span(first_call).start.line + 1
    return Finding(
        CODE,
        f"{shown_as}() runs the code in {where} that needs converting for XLA, as the call at "
        f"line {line} does (said there)",
        model.span(call),
        Severity.INFORMATION,
        manual=f"Convert {where} itself: the change belongs in that file, not at this call.",
    )


def leaves_device_by_hand(f: Finding) -> bool:
    """An XLA118 finding whose helper chooses the device: until that file is converted the
    script's device is not the XLA device (the conversion summary says to check it)."""
    return f.code == CODE and DEVICE_NOTE in f.message


HOVER = """\
**XLA118 · workspace helper needs converting**

The called function (or class: its `__init__`, the method called) lives in another file of
the project and does CUDA-only setup there
(NCCL, `torch.cuda.set_device`, DDP `device_ids`, a CUDA device picker, ...). Convert that
file too: `xla-lens check path/to/helper.py`.
"""

RULE = Rule(
    code=CODE,
    name="workspace-helper",
    category=Category.CONVERSION,
    summary="a call into a helper or class of another workspace module whose body needs "
    "converting (NCCL, set_device, DDP device_ids, a CUDA picker) → named at the call, converted "
    "in its file",
    severity=Severity.WARNING,
    check=check,
    has_fix=False,
    hover={},
)
