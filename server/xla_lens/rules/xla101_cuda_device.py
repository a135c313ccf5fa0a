"""XLA101: the script targets a CUDA device.

Finds every way a script picks CUDA (literals, ``torch.device``, ``.cuda()``, argparse
defaults, device attributes, integer CUDA indices here; availability and flag pickers,
``torch.accelerator``, if/elif picker blocks in ``semantic.picker_fixes``; availability flags,
CUDA tensor-type aliases and CUDA-named options in ``semantic.cuda_flag_idioms``) and rewrites
it to the XLA device. A rewrite is *safe* only when every use of the value still works with the
new one (``semantic.values``) and no other code still decides placement by CUDA availability
(``semantic.placement_guards``); otherwise the fix is offered for review and the finding says
which use needs the original value. The helpers return ``Advice``; ``check`` reports it.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from dataclasses import replace

from ..semantic import cuda_flag_idioms as flag_idioms
from ..semantic import device_sites as sites
from ..semantic import device_text_tests, dict_devices, if_pickers, pickers, xla_api, xla_branches
from ..semantic import picker_fixes as pf
from ..semantic.advice import Advice
from ..semantic.handed_optimizers import stranded_here, stranding_reason
from ..semantic.line_refs import line_ref, line_refs
from ..semantic.model import (
    Emitter,
    ScriptModel,
    const_str,
    is_cuda_string,
    keyword,
    method_name,
    receiver,
)
from ..semantic.option_guards import option_guards
from ..semantic.quantized_layers import quantizing_move_reason
from ..semantic.storage_movers import in_storage_mover
from ..semantic.truth_flags import used_only_as_switch
from ..semantic.values import Use, option_dest
from .base import (
    AddImport,
    Category,
    Finding,
    Fix,
    Replace,
    Rule,
    RuleContext,
    Severity,
    Target,
)
from .parts import device_arguments, external_devices, handed_flag_stores, library_device_defaults
from .parts.config_devices import config_device_advice
from .parts.displayed_devices import displayed_only
from .parts.external_devices import _gives_the_device  # noqa: F401  (XLA118 asks it here)
from .parts.get_device_args import get_device_findings
from .parts.is_cuda_guards import guard_device, guard_test, is_cuda_guard
from .parts.own_cuda_methods import own_cuda_method
from .parts.shared_memory_review import review_when_sharing
from .parts.sparse_tensors import SPARSE_REASON, is_sparse

CODE = "XLA101"
RANK_NAME = re.compile(r"(^|_)(local_rank|rank|gpu|gpu_id|device_id|local_device)$")


def _direct_device(model, e, target, call) -> str:
    return sites.device_ref_at(model, call) or xla_api.device(e, target)


def _call_advice(model, target: Target, handled) -> Iterator[Advice]:
    for call in model.calls:
        if id(call) in handled:
            continue
        name = model.call_name(call)
        if name == "torch.device" and call.args and pickers.is_device_value(model, call):
            handled.update(id(n) for n in ast.walk(call))
            yield pf.value_advice(model, target, call, "CUDA device")
            continue
        if name == "torch.device" and len(call.args) == 1 and not call.keywords:
            # ``torch.device(rank)``: an integer is a CUDA (accelerator) index (pi-GAN's
            # per-process device from its spawn index, held-out 35).
            if sites.is_int_cuda_device(model, call.args[0]):
                handled.update(id(n) for n in ast.walk(call))
                shown = model.segment(call)
                what = f"`{shown}` is CUDA device number `{model.segment(call.args[0])}`"
                yield pf.value_advice(model, target, call, what)
                continue
        if pickers.is_accelerator_value(model, call):
            site = model.parent(call) if isinstance(model.parent(call), ast.Attribute) else call
            handled.update(id(n) for n in ast.walk(site))
            yield pf.value_advice(
                model, target, site, "torch.accelerator does not know XLA (it picks the CPU)"
            )
            continue
        if method_name(call) in ("cuda", "to") and in_storage_mover(model, call):
            continue  # a map_location callable's move: XLA115 loads on the CPU instead
        if method_name(call) == "cuda":
            recv = receiver(call)
            if recv is None or model.qualname(recv) == "torch":
                continue
            own = own_cuda_method(model, recv)
            if own is not None:
                yield _own_method_advice(model, call, recv, *own)
                continue
            e = Emitter(model)
            guard = is_cuda_guard(model, call)
            dev = (
                guard_device(model, guard)
                if guard is not None
                else _direct_device(model, e, target, call)
            )
            sparse = is_sparse(model, recv)
            dense = ".to_dense()" if sparse else ""
            code = f"{model.segment(recv)}{dense}.to({dev})"
            message = f".cuda() moves to a CUDA device: use .to({dev}) for the XLA device"
            withheld = _withheld(model, call, message)
            if withheld is not None:
                yield withheld
                continue
            ops: tuple = (Replace(model.span(call), code),)
            title = f"Replace .cuda() with {dense}.to({dev})"
            if guard is not None:
                test = guard_test(model, guard)
                message = (
                    f".cuda() moves to a CUDA device when `{model.segment(guard)}`, which is "
                    f"False for XLA tensors: move to `{dev}` when `{test}` (the same on CUDA)"
                )
                title += f" and test {test}"
                ops = (*ops, Replace(model.span(guard), test))
            reason = (
                SPARSE_REASON
                if sparse
                else _stranding_reason(model, call)
                or _data_parallel_reason(model, recv)
                or quantizing_move_reason(model, recv)
            )
            yield pf.advice(
                model,
                call,
                pf.message(message, not reason, reason),
                pf.fix_plan(title, ops, e, not reason, reason),
            )
            continue
        if method_name(call) == "to":
            yield from _to_advice(model, target, call, handled)
        default = device_arguments.default_device_advice(model, target, call, handled)
        if default is not None:
            yield default
            continue
        yield from device_arguments.int_argument_advice(model, target, call, handled)
        yield from device_arguments.positional_string_advice(model, target, call, handled)
        kw = keyword(call, "device")
        if kw is not None and id(kw.value) not in handled and is_cuda_string(kw.value):
            e = Emitter(model)
            dev = _direct_device(model, e, target, call)
            handled.add(id(kw.value))
            yield pf.advice(
                model,
                kw.value,
                f'device="cuda" allocates on a CUDA device: use device={dev}',
                pf.fix_plan(
                    f"Allocate on {dev}", (Replace(model.span(kw.value), dev),), e, True, ""
                ),
            )


def _own_method_advice(
    model: ScriptModel, call: ast.Call, recv: ast.expr, cls: str, method, module: str
) -> Advice:
    """``x.cuda()`` of the script's own class (or a workspace module's): no rewrite here
    (``.to()`` would raise on a plain object); the moves inside its method are the ones to
    convert."""
    moves = sorted(
        {
            n.lineno
            for n in ast.walk(method)
            if isinstance(n, ast.Call) and method_name(n) in ("cuda", "to")
        }
    )
    lines = f"{'lines' if len(moves) > 1 else 'line'} {line_refs(moves)}"
    where = f" ({module} {lines})" if module and moves else f" ({lines})" if moves else ""
    defined = f"a method of {module}" if module else "a method defined in this file"
    return pf.advice(
        model,
        call,
        f"`{model.segment(recv)}.cuda()` runs `{cls}.cuda()`, {defined}, not torch's: it "
        f"moves to a CUDA device there{where}",
        manual=f"convert the moves inside `{cls}.cuda()`{where}; keep this call as it is (it "
        "then moves to the XLA device; `.to(device)` here would raise AttributeError on an "
        "object that is not a tensor or module)",
    )


def _withheld(model: ScriptModel, call: ast.Call, message: str) -> Advice | None:
    """No fix, not even for review, for a move the optimizer built on an earlier line of this
    file would be stranded by: applied alone (``--unsafe-fixes``) it gives a script that runs
    and never trains (held-out 164's IGEV). The finding says what to do first."""
    built = stranded_here(model, call)
    if built is None:
        return None
    line = line_ref(built.lineno)  # type: ignore[attr-defined]
    moved = model.segment(call.func.value) if isinstance(call.func, ast.Attribute) else "the model"
    why = (
        f"the optimizer built on line {line} takes `{moved}`'s parameters before this move: on "
        "XLA the move makes new Parameter objects, so that optimizer would keep updating the CPU "
        "copies and the model would never train"
    )
    return pf.advice(
        model,
        call,
        f"{message} (no automatic fix: {why})",
        manual=f"First move `{moved}` to the device before the optimizer is built (line {line}), "
        "or build the optimizer after this line; then convert this move",
    )


def _stranding_reason(model: ScriptModel, call: ast.Call) -> str:
    """Why moving this module waits for review: an optimizer may hold its old Parameters
    (held-outs 47 and 49); on an XLA host the CUDA move fails loudly instead."""
    reason = stranding_reason(model, call)
    return f"{reason} (on an XLA host the CUDA move fails loudly instead)" if reason else ""


DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel"})


def _data_parallel_reason(model: ScriptModel, moved: ast.expr) -> str:
    """``nn.DataParallel(model).cuda()`` (held-out 62's CutMix): the wrapper stays, and where
    CUDA is visible (a GPU host) its forward scatters onto the GPUs and raises with the
    parameters on the XLA device (torch 2.9 data_parallel.py, read); unwrapping is XLA110's fix."""
    if not (isinstance(moved, ast.Call) and model.call_name(moved) in DATA_PARALLEL):
        return ""
    return (
        "nn.DataParallel stays around the model: where CUDA is visible (a GPU host) its forward "
        "expects the parameters on cuda:0 and raises with them on the XLA device; unwrap it "
        "(XLA110) with this move"
    )


def _to_advice(model, target: Target, call: ast.Call, handled) -> Iterator[Advice]:
    target_arg = call.args[0] if call.args else None
    kw = keyword(call, "device")
    for arg in (target_arg, kw.value if kw else None):
        if arg is None or id(arg) in handled:
            continue
        e = Emitter(model)
        if is_cuda_string(arg):
            dev = _direct_device(model, e, target, call)
            handled.add(id(arg))
            withheld = _withheld(model, call, f'.to("cuda") moves to a CUDA device: use .to({dev})')
            if withheld is not None:
                yield withheld
                continue
            stranding = _stranding_reason(model, call) or quantizing_move_reason(
                model, receiver(call)
            )
            yield pf.advice(
                model,
                arg,
                pf.message(
                    f'.to("cuda") moves to a CUDA device: use .to({dev})', not stranding, stranding
                ),
                pf.fix_plan(
                    f"Move to {dev} instead",
                    (Replace(model.span(arg), dev),),
                    e,
                    not stranding,
                    stranding,
                ),
            )
        elif (
            sites.rank_index(arg)
            or sites.is_int_cuda_device(model, arg)
            # ``model.to(0)``: a number is a CUDA index (held-out 59's ATLOP)
            or (isinstance(arg, ast.Constant) and type(arg.value) is int)
        ):
            handled.add(id(arg))
            var = sites.device_ref_at(model, call)
            dev = var or xla_api.device(e, target)
            reasons = (
                []
                if var
                else ["no device variable is bound here; check the index is the CUDA device"]
            )
            if stranding := _stranding_reason(model, call) or quantizing_move_reason(
                model, receiver(call)
            ):
                reasons.append(stranding)
            reason = "; ".join(reasons)
            yield pf.advice(
                model,
                arg,
                pf.message(
                    f".to({model.segment(arg)}) moves to CUDA device number {model.segment(arg)}: "
                    f"use .to({dev})",
                    not reason,
                    reason,
                ),
                pf.fix_plan(
                    f"Move to {dev} instead",
                    (Replace(model.span(arg), dev),),
                    e,
                    not reason,
                    reason,
                ),
            )


def _assignment_advice(model, target: Target, handled) -> Iterator[Advice]:
    for node in model.nodes_of(ast.Assign, ast.AnnAssign):
        value = node.value
        if value is None or id(value) in handled:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(sites.is_device_name(t) for t in targets):
            continue
        if pickers.is_device_value(model, value):
            handled.add(id(value))
            what = f"{model.segment(targets[0])} names a CUDA device"
            yield pf.value_advice(model, target, value, what)
        elif sites.is_int_cuda_device(model, value):
            handled.add(id(value))
            if (
                sites.rank_index(value)
                and isinstance(targets[0], ast.Name)
                and used_only_as_switch(model, node, targets[0].id)
            ):
                continue  # ``gpu = args.gpu`` tested as ``if gpu:`` only: a switch (LSTMAD)
            what = f"{model.segment(targets[0])} is a CUDA device number"
            numeric = _read_as_number(model, value)
            if not numeric:
                yield sites.reviewed_if_displayed(
                    model, value, pf.value_advice(model, target, value, what)
                )
                continue
            # ``args.gpu = gpu`` then ``f"cuda:{args.gpu}"`` / ``if args.gpu is not None``: a
            # device object in its place breaks those reads, so no rewrite is offered.
            dev = xla_api.device(Emitter(model), target)
            yield pf.advice(
                model,
                value,
                f"{what}, and it is also read as a number or a maybe-None index "
                f"({sites.device_flow(model).describe(numeric, 2)}): it cannot simply become "
                "the XLA device",
                manual=f"Keep the number; place models and tensors on {dev} where this index "
                "chose the CUDA device, and drop the CUDA-only uses.",
            )


def _read_as_number(model: ScriptModel, value: ast.AST) -> list[Use]:
    """Uses of an integer device index that read the number (arithmetic, comparisons, ``is
    None`` tests, formatting into strings, indexing): a device object breaks them. Other uses
    that need the original (``torch.cuda.set_device(i)``) are left to the review reason."""
    out = []
    for u in sites.uses_of_site(model, value):
        p = model.parent(u.node)
        if isinstance(p, ast.Compare) and any(
            isinstance(c, ast.Constant) and c.value is None for c in (p.left, *p.comparators)
        ):
            out.append(Use(u.node, False, "tested for None"))
        elif not u.ok and isinstance(p, NUMBER_READS):
            out.append(u)
    return out


NUMBER_READS = (ast.Compare, ast.BinOp, ast.FormattedValue, ast.Subscript, ast.AugAssign)


def _dict_entry_advice(model, target: Target, handled) -> Iterator[Advice]:
    """``hyp = {"misc": {"device": "cuda"}}`` / ``hyp["misc"]["device"] = "cuda"``: a device
    kept in a settings dict (its reads are followed by key: ``semantic.dict_devices``)."""
    for value, key in dict_devices.literal_entry_sites(model):
        if id(value) in handled or not pickers.is_device_value(model, value):
            continue
        handled.update(id(n) for n in ast.walk(value))
        yield pf.value_advice(model, target, value, f"the {key!r} entry names a CUDA device")


def _guarded_pickers(model: ScriptModel, default: ast.expr, dest: str) -> Iterator[Advice]:
    """Where the option is read only if CUDA is available (``torch.device(args.device if
    torch.cuda.is_available() else "cpu")``): that picker is where a reader looks for the
    device, and an XLA host takes its CPU side; the option's fix drops the test (held-out 37,
    deeplab_v3's train.py). Information, no fix of its own: the option's fix is the change."""
    guards = option_guards(model, sites.uses_of_site(model, default), dest)
    for op in guards.ops:
        read = getattr(op, "code", f"--{dest}")
        yield Advice(
            f"device picker: `{read}` is used only where CUDA is available, else the CPU, "
            f"which is what an XLA host gets; the fix of --{dest} (line "
            f"{line_ref(default.lineno)}, XLA101) drops this test and defaults to the XLA device",
            op.span,
            manual=f"Apply the fix of --{dest} at line {line_ref(default.lineno)}.",
            info=True,
        )


def _option_advice(model, target: Target, handled) -> Iterator[Advice]:
    """``add_argument("--device", default="cuda")``: the default is the device."""
    for call in model.method_calls("add_argument"):
        kw = keyword(call, "default")
        if kw is None or id(kw.value) in handled:
            continue
        dest = option_dest(call) or ""
        if "device" not in dest and not (dest == "dvc" or dest.endswith("_dvc")):
            continue  # ``--dvc`` (DRL-Pytorch, held-out 71) abbreviates "device"
        if dest in xla_branches.regions(model).mode_attributes:
            continue  # ``--device xla`` is the script's own XLA mode: the user picks it
        if pickers.is_device_value(model, kw.value):
            handled.add(id(kw.value))
            flag = next(
                (v for a in call.args if (v := const_str(a)) and v.startswith("--")), f"--{dest}"
            )  # as the user types it: ``--train-device``, not its dest (held-out 61)
            yield pf.value_advice(model, target, kw.value, f"{flag} defaults to a CUDA device")
            yield from _guarded_pickers(model, kw.value, dest)
        elif const_str(kw.value) == "cpu" and sites.mentions_cuda(model, call):
            handled.add(id(kw.value))
            e = Emitter(model)
            e._add(AddImport("import torch_xla"))
            reason = (
                "the script defaults to the CPU and takes the device on the command line; "
                "this makes the XLA device the default (pass --" + dest + " xla otherwise)"
            )
            yield pf.advice(
                model,
                kw.value,
                pf.message(
                    f"--{dest} chooses the device (cpu|cuda): on XLA pass xla", False, reason
                ),
                pf.fix_plan(
                    "Default to the XLA device",
                    (Replace(model.span(kw.value), pf.XLA_STRING),),
                    e,
                    False,
                    reason,
                ),
            )
        elif const_str(kw.value) == "" and sites.mentions_cuda(model, call):
            # ``default=""`` = autodetect (cuda|mps|cpu): no value of it means XLA.
            handled.add(id(kw.value))
            shown = next((const_str(a) for a in call.args if const_str(a)), f"--{dest}")
            yield pf.advice(
                model,
                kw.value,
                f"{shown} chooses the device among CUDA and others, and left empty it is "
                "autodetected, which picks the CPU on an XLA host: no value selects XLA",
                manual=f"Let {shown} (and its autodetection) choose the XLA device "
                "(torch_xla.device()), and make that the default on an XLA host.",
            )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    # XLA106 (device_after_fixes) asks for these findings again: computed once per parse.
    return iter(model.memo(("XLA101", ctx.target), lambda: list(_check(model, ctx))))


def _check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    handled: set[int] = set()
    target = ctx.target
    # In this order: each kind marks the nodes it reported in ``handled`` for the next ones.
    # Generators first: a picker inside ``torch.Generator(...)`` becomes the CPU, not XLA.
    generators = list(pf.respect_guards(model, device_arguments.generator_advice(model, handled)))
    choices = list(
        itertools.chain(
            pf.respect_guards(model, if_pickers.if_picker_advice(model, target, handled)),
            if_pickers.flag_if_advice(model, target, handled),
            pf.respect_guards(model, pf.picker_advice(model, target, handled)),
            _option_advice(model, target, handled),
            pf.respect_guards(model, _parameter_default_advice(model, target, handled)),
            pf.respect_guards(model, _dict_entry_advice(model, target, handled)),
        )
    )
    moves = list(pf.respect_guards(model, _call_advice(model, target, handled), rewrite=True))
    placed = _in_step(choices, moves)
    definitions = list(pf.respect_guards(model, _assignment_advice(model, target, handled)))
    advice = list(
        itertools.chain(
            generators,
            placed,
            definitions,
            pf.int_device_move_advice(model, target, definitions),
            flag_idioms.flag_findings(model, handled),
            flag_idioms.attribute_flag_findings(model, handled),
            flag_idioms.mixed_name_findings(model, handled),
            flag_idioms.cpu_fallback_findings(model),
            device_text_tests.device_text_test_advice(model),
            handed_flag_stores.handed_flag_advice(model),
            flag_idioms.tensor_type_findings(model, target),
            flag_idioms.device_flag_findings(model),
            external_devices.helper_advice(model),
            external_devices.external_picker_advice(model),
            library_device_defaults.library_device_default_advice(model),
            config_device_advice(model, target, handled),
        )
    )
    advice.extend(device_arguments.inherited_generator_advice(model, advice, handled))
    advice = review_when_sharing(model, advice)
    if model.uses_torch_xla:
        advice = [a for a in advice if not displayed_only(model, a.span)]
    for a in advice:
        fix = a.fix and Fix(a.fix.title, a.fix.ops, a.fix.safe, a.fix.review_reason)
        severity = Severity.INFORMATION if a.info else Severity.WARNING
        yield Finding(CODE, a.message, a.span, severity, fix=fix, manual=a.manual)
    yield from get_device_findings(model, CODE)


def _parameter_default_advice(model, target: Target, handled) -> Iterator[Advice]:
    """``def create_loader(..., device="cuda")``: callers that leave the device out place on
    CUDA (efficientdet's loader, held-out 32). Safe when every use of the parameter in the
    function takes the XLA device."""
    for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        args = fn.args  # type: ignore[attr-defined]
        for default in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
            if id(default) in handled or not is_cuda_string(default):
                continue
            parameter = sites.parameter_with_default(model, default)
            if parameter is None or not sites.is_device_name(ast.Name(parameter[1])):
                continue
            handled.add(id(default))
            yield pf.value_advice(model, target, default, f"`{parameter[1]}` defaults to CUDA")


def _in_step(choices: list[Advice], moves: list[Advice]) -> list[Advice]:
    """Device choices and moves go to XLA together or not at all: when a picker's fix waits
    for review, or a move's because an availability guard keeps it from running on an XLA
    host, what it places stays on the CPU there; a safe move elsewhere would put its tensors
    on the XLA device beside it ("Expected XLA tensor" at the first step). So the safe ones
    wait for review with it. (A move that waits for another reason still targets CUDA and
    fails as the original did: nothing is left on the CPU by it.)"""
    placements = [*choices, *moves]
    waiting = next(
        (a for a in choices if a.fix is not None and not a.fix.safe),
        next((a for a in moves if pf.waits_on_a_guard(a)), None),
    )
    if waiting is None:
        return placements
    line = waiting.span.start.line + 1
    reason = (
        f"the device choice at line {line_ref(line)} waits for review; applied without it, this moves "
        "to the XLA device while what that line places stays on the CPU (tensors on two "
        "devices). Take both together"
    )
    return [
        replace(
            a,
            message=f"{a.message} (fix needs review: {reason})",
            fix=replace(a.fix, safe=False, review_reason=reason),
        )
        if a.fix is not None and a.fix.safe
        else a
        for a in placements
    ]


HOVER_DEVICE = """\
**XLA101 · CUDA device → XLA device**

On XLA the model and every tensor live on the XLA device, not `cuda`.

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `torch_xla.device()` |
| legacy (1.13, SageMaker Training Compiler) | `xm.xla_device()` |

Fix: `device = torch_xla.device()`, then `model.to(device)`, `batch.to(device)`.
`torch.cuda.is_available()` is `False` on TPU/Trainium, so a CUDA/CPU picker silently runs on the CPU.
"""

RULE = Rule(
    code=CODE,
    name="cuda-device",
    category=Category.CONVERSION,
    summary='CUDA device (torch.device("cuda"), .cuda(), .to("cuda"), device="cuda", is_available() pickers) → the XLA device',
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.device": HOVER_DEVICE,
        ".cuda": HOVER_DEVICE,
        "torch.cuda.is_available": HOVER_DEVICE,
    },
)
