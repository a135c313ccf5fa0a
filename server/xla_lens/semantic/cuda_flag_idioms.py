"""XLA101's advice for the flag idioms of older scripts: an availability flag that turns on
CUDA placement (``cuda = True if torch.cuda.is_available() else False``), the CUDA tensor-type
aliases it chooses (``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor``), and
options or config fields named for CUDA that decide a device picker (``-no_cuda``,
``cuda: bool = True``). The analysis lives in ``semantic.cuda_tensor_types`` and
``semantic.device_flags``; this module words the findings and builds the fixes, as ``Advice``
that the rule reports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from . import cuda_tensor_types as tensor_types
from . import device_flags, pickers, xla_api
from . import device_sites as sites
from .advice import Advice, FixPlan
from .cpu_fallbacks import cpu_fallbacks
from .cuda_queries import RAISE_ON_XLA
from .edits import Replace
from .line_refs import line_ref, line_refs
from .model import Emitter, ScriptModel
from .node_helpers import is_cuda_string
from .xla_api import Target


def _finding(model, node, message, fix=None, manual=None) -> Advice:
    return Advice(message, model.span(node), fix=fix, manual=manual)


# How a flag's finding begins its second clause; engine/consistency.py looks for it.
FLAG_LEFT = "is whether CUDA is available (False on an XLA host)"


def _fix(title: str, ops: tuple, e: Emitter, reason: str) -> FixPlan:
    return FixPlan(title, (*ops, *e.imports), safe=False, review_reason=reason)


def _message(base: str, reason: str) -> str:
    return f"{base} (fix needs review: {reason})"


def flag_findings(model: ScriptModel, handled: set[int]) -> Iterator[Advice]:
    """``cuda = True if torch.cuda.is_available() else False``: a flag that turns CUDA
    placement on; on an XLA host it is False, so everything it guards stays on the CPU.
    When it guards only moves that XLA101 rewrites (``if cuda: model.cuda()``) and tensor
    type aliases that get their own fix, making it true is offered for review."""
    for node, name, tests in sites.availability_flags(model, handled):
        lines = line_refs(t.lineno for t in tests[:4])
        base = f"{name} {FLAG_LEFT}: the CUDA placement it turns on (line {lines}) never runs there"
        plan = tensor_types.flag_plan(model, node, name)
        if plan.blocker:
            yield _finding(
                model,
                node.value,
                base,
                manual=f"Place on the XLA device (torch_xla.device()) where {name} is true, "
                f"then make {name} true on the XLA host (no automatic fix: {plan.blocker}).",
            )
            continue
        guarded = line_refs(plan.guarded_lines)
        reason = (
            f"it makes {name} true on every host, so what it guards (line {guarded}) always "
            "runs: accept it together with the review fixes of those lines (their CUDA moves "
            "and tensor types become the XLA device); alone, that code still calls CUDA and "
            "fails on a host without it, and the script no longer falls back to the CPU"
        )
        yield _finding(
            model,
            node.value,
            _message(base, reason),
            _fix(
                f"Make {name} true: the placements it guards go to the XLA device",
                (Replace(model.span(node.value), "True"),),
                Emitter(model),
                reason,
            ),
        )


def attribute_flag_findings(model: ScriptModel, handled: set[int]) -> Iterator[Advice]:
    """``args.cuda = not args.no_cuda and torch.cuda.is_available()`` (an attribute, so not
    one of ``flag_findings``' names): False on an XLA host, so every ``if args.cuda:`` placement
    stays on the CPU. The review fix keeps the user's flag and drops the availability part."""
    for attr, node in pickers.attribute_flags(model).items():
        if id(node.value) in handled:
            continue
        target = model.segment(node.targets[0])
        tests = [
            n
            for n in model.nodes_of(ast.If, ast.IfExp)
            if any(isinstance(a, ast.Attribute) and a.attr == attr for a in ast.walk(n.test))  # type: ignore[attr-defined]
            and _uses_cuda(model, n)
        ]
        if not tests:
            continue  # ``if opt.num_gpu > 1:`` scaling the batch size places nothing
        base = (
            f"{target} {FLAG_LEFT}: the CUDA placement "
            f"or multi-device code it turns on (line {line_refs(t.lineno for t in tests[:4])}) "
            "never runs there"
        )
        flags = pickers.flag_part(model, node.value)
        if not isinstance(flags, list):
            yield _finding(
                model,
                node.value,
                base,
                manual=f"Make {target} true on the XLA host (place on torch_xla.device() where "
                "it is true).",
            )
            continue
        kept = " and ".join(model.segment(f) for f in flags)
        reason = (
            f"{target} then follows the flag alone, so what it guards always runs unless the "
            "flag says no: accept it together with the review fixes of those lines (their CUDA "
            "moves become the XLA device); alone, that code still calls CUDA"
        ) + _raising_queries(model, tests)
        yield _finding(
            model,
            node.value,
            _message(base, reason),
            _fix(
                f"Keep the flag only: {target} = {kept}",
                (Replace(model.span(node.value), kept),),
                Emitter(model),
                reason,
            ),
        )


def _raising_queries(model: ScriptModel, tests: list[ast.If | ast.IfExp]) -> str:
    """``; and line 219 `torch.cuda.current_device()` raises ...`` for CUDA queries the
    flag's true side calls that raise without CUDA: no fix of a placement changes them, and
    once the flag is true on the XLA host they run (dgcnn's ``'Using GPU : ' +
    str(torch.cuda.current_device())`` under ``if args.cuda:``, held-out 69)."""
    found: dict[int, str] = {}
    for test in tests:
        roots = [test.body] if isinstance(test, ast.IfExp) else test.body
        for root in roots:
            for n in ast.walk(root):
                if isinstance(n, ast.Call) and model.call_name(n) in RAISE_ON_XLA:
                    found.setdefault(id(n), f"line {line_ref(n.lineno)} `{model.segment(n)}`")
    if not found:
        return ""
    shown = ", ".join(list(found.values())[:3])
    return (
        f"; and {shown} raise{'s' if len(found) == 1 else ''} on a host without CUDA (no "
        "fix changes that: remove it or give it an XLA answer, e.g. xr.local_ordinal())"
    )


# Calls that place on CUDA or start the multi-device work a GPU count turns on (hifi-gan's
# ``if h.num_gpus > 1:`` process group, DDP and ``mp.spawn``).
CUDA_OR_MULTI_DEVICE = frozenset(
    {
        "cuda", "DataParallel", "DistributedDataParallel", "DDP", "init_process_group",
        "spawn", "DistributedSampler",
    }
)  # fmt: skip


def _callee_name(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _uses_cuda(model: ScriptModel, test: ast.If | ast.IfExp) -> bool:
    """What ``test`` guards places on CUDA or calls it (``.cuda()``, a "cuda" device,
    ``torch.cuda.*``, a CUDA tensor type) or starts multi-device work (DDP, a process group,
    ``mp.spawn``): the claim "the CUDA placement or multi-device code it turns on" needs one (held-out 40:
    ``if opt.num_gpu > 1:`` only scales the batch size and the workers)."""
    roots: list[ast.AST] = (
        [test.body, test.orelse] if isinstance(test, ast.IfExp) else [*test.body, *test.orelse]
    )
    for root in roots:
        for n in ast.walk(root):
            if is_cuda_string(n):
                return True
            if isinstance(n, ast.Call) and _callee_name(n) in CUDA_OR_MULTI_DEVICE:
                return True
            if isinstance(n, ast.Attribute) and (model.qualname(n) or "").startswith("torch.cuda."):
                return True  # torch.cuda.set_device(...), Tensor = torch.cuda.FloatTensor
    return False


def mixed_name_findings(model: ScriptModel, handled: set[int]) -> Iterator[Advice]:
    """``use_gpu = args.use_gpu and torch.cuda.is_available()`` deciding ``if use_gpu:`` blocks
    that no device picker rewrites (dlrm, held-out 24: the device is chosen inside a longer
    ``if use_gpu:`` block): False on an XLA host whatever the user asks, so every block it
    guards stays off the device. The review fix keeps the user's flag only, as for
    ``args.cuda = ...`` (``attribute_flag_findings``)."""
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        target = node.targets[0] if len(node.targets) == 1 else None
        if not isinstance(target, ast.Name) or id(node.value) in handled:
            continue
        if not any(k in target.id.lower() for k in pickers.FLAG_WORDS):
            continue
        found = pickers.mixed_flag(model, target)
        if found is None or found[0] is not node:
            continue
        tests = [
            n
            for n in model.name_nodes(target.id)
            if isinstance(model.parent(n), ast.If | ast.IfExp) and model.parent(n).test is n  # type: ignore[union-attr]
        ]
        if not tests:
            continue
        handled.add(id(node.value))
        kept = " and ".join(model.segment(f) for f in found[1])
        lines = line_refs(t.lineno for t in tests[:4])
        guards = [model.parent(t) for t in tests]
        reason = (
            f"{target.id} then follows the flag alone, so what it guards (line {lines}) runs on "
            "the XLA host whenever the flag says so: accept it together with the review fixes "
            "of those lines (their CUDA moves become the XLA device); alone, that code still "
            "calls CUDA"
        ) + _raising_queries(model, guards)  # type: ignore[arg-type]
        yield _finding(
            model,
            node.value,
            _message(
                f"{target.id} is False on an XLA host whatever the user asks (the flag is ANDed "
                f"with a CUDA availability test): the CUDA placement it turns on (line {lines}) "
                "never runs there",
                reason,
            ),
            _fix(
                f"Keep the flag only: {target.id} = {kept}",
                (Replace(model.span(node.value), kept),),
                Emitter(model),
                reason,
            ),
        )


def cpu_fallback_findings(model: ScriptModel) -> Iterator[Advice]:
    """``if not torch.cuda.is_available(): config.device = 'cpu'``: always taken on an XLA
    host (``semantic.cpu_fallbacks``)."""
    for fb in cpu_fallbacks(model):
        test = model.segment(fb.guard.test)[:60]
        yield _finding(
            model,
            fb.assign,
            f"{fb.target} falls back to the CPU when `{test}` says CUDA is missing, which is "
            "every XLA host: whatever the conversion makes of its other value, the script "
            "trains on the CPU",
            manual=f"Drop this fallback, or set {fb.target} to the XLA device here "
            '("xla", or torch_xla.device()) when the script is meant to run on XLA.',
        )


def device_flag_findings(model: ScriptModel) -> Iterator[Advice]:
    """``add_argument("-no_cuda", action="store_true")`` / a ``cuda: bool = True`` field that
    decides a picker: the picker's fix keeps the user's flag, so once converted the flag
    switches the XLA device under a CUDA name. No fix: renaming an option changes the command
    lines it accepts (and argparse's abbreviations)."""
    for flag in device_flags.device_flags(model):
        shown = f"the field `{flag.spelled}`" if flag.is_field else f"the option {flag.spelled}"
        set_to = (
            f"{flag.attr} is {not flag.negated}"
            if flag.is_field or flag.negated or flag.default is None
            else f"{flag.spelled} is given"
        )
        where = f"{shown} decides the device at line {line_ref(flag.picker_line)}"
        if flag.device_by_default is False:
            yield Advice(
                f"{where}: after conversion the XLA device is used only when {set_to}; "
                "without it the script trains on the CPU",
                model.span(flag.declared),
                manual=f"Make the XLA device the default (the device is chosen when {set_to}), "
                "or always run the converted script with it set.",
            )
            continue
        off = (
            "when it is set" if flag.negated and not flag.is_field else f"when {flag.attr} is False"
        )
        yield Advice(
            f"{where}: after conversion it switches the XLA device, not CUDA (the XLA device "
            f"by default, the CPU {off}), although its name says CUDA",
            model.span(flag.declared),
            manual="Nothing to change to train on the XLA device; rename the flag (and every "
            "use of it) if its CUDA name would mislead the users of the converted script.",
            info=True,
        )


def tensor_type_findings(model: ScriptModel, target: Target) -> Iterator[Advice]:
    """``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`` used only as
    ``Tensor(...)`` and ``x.type(Tensor)``: what it builds goes to the XLA device (XLA405
    reports the aliases with other uses, which have no fix)."""
    for alias in tensor_types.tensor_type_aliases(model):
        if alias.blocker:
            continue
        e = Emitter(model)
        ops = tensor_types.alias_edits(model, alias, e, target)
        dev = xla_api.device(Emitter(model), target)
        uses = line_refs(alias.use_lines[:6])
        cuda_type = f"torch.cuda.{alias.type_name}"
        when = f" when {model.segment(alias.flag)} is true" if alias.flag is not None else ""
        reason = (
            f"every tensor {alias.name} builds or casts to (line {uses}) then goes to the XLA "
            "device on every host: the models they meet must be there too (accept the review "
            "fixes of the CUDA moves"
            + (f" and of the {model.segment(alias.flag)} flag" if alias.flag is not None else "")
            + "); each is built on the CPU first and copied, as the CPU branch built it"
        )
        yield _finding(
            model,
            alias.assign.value,
            _message(
                f"{alias.name} is the CUDA tensor type {cuda_type}{when}: the tensors it builds "
                f"and casts to go to CUDA, which an XLA host lacks; on XLA build them on {dev}",
                reason,
            ),
            _fix(
                f"Build {alias.name}'s tensors on the XLA device ({alias.type_name} "
                f"-> torch.{alias.dtype})",
                ops,
                e,
                reason,
            ),
        )
