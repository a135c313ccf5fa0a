"""XLA101: the script targets a CUDA device.

Finds every way a script picks CUDA (literals, ``torch.device``, ``.cuda()``, availability
and flag pickers, ``torch.accelerator``, if/elif picker blocks, argparse defaults, device
attributes, integer CUDA indices; availability flags, CUDA tensor-type aliases and CUDA-named
options in ``cuda_flag_idioms``) and rewrites it to the XLA device. A rewrite is *safe* only
when every use of the value still works with the new one (``semantic.values``); otherwise the
fix is offered for review and the finding says which use needs the original value.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import replace

from ..semantic import device_sites as sites
from ..semantic import pickers, placement_guards, xla_api
from ..semantic.model import (
    Emitter,
    ScriptModel,
    const_str,
    is_cuda_string,
    keyword,
    method_name,
    receiver,
)
from ..semantic.values import Use, option_dest
from . import cuda_flag_idioms as flag_idioms
from .base import (
    AddImport,
    Category,
    Finding,
    Fix,
    Replace,
    ReplaceStatement,
    Rule,
    RuleContext,
    Severity,
    Target,
)

CODE = "XLA101"
XLA_STRING = '"xla"'
RANK_NAME = re.compile(r"(^|_)(local_rank|rank|gpu|gpu_id|device_id|local_device)$")


def _finding(model, node, message, fix=None, manual=None) -> Finding:
    return Finding(CODE, message, model.span(node), Severity.WARNING, fix=fix, manual=manual)


def _choose(
    model: ScriptModel, e: Emitter, target: Target, uses: list[Use], str_typed: bool
) -> tuple[str, bool, str]:
    """Replacement code, whether it is safe, and why not: the XLA device when every use
    takes a device; else (for review) the string ``"xla"`` where a string was expected."""
    bad = [u for u in uses if not u.ok]
    if not bad:
        return xla_api.device(e, target), True, ""
    reason = "the device value is used where the original matters: " + sites.device_flow(
        model
    ).describe(bad)
    if str_typed:
        e._add(AddImport("import torch_xla"))
        return XLA_STRING, False, reason
    return xla_api.device(e, target), False, reason


def _fix(title: str, ops: tuple, e: Emitter, safe: bool, reason: str) -> Fix:
    return Fix(title, (*ops, *e.imports), safe=safe, review_reason=reason)


def _with_guards(
    model, handled, picker, test, ops: tuple, safe: bool, reason: str, kept=frozenset()
) -> tuple[tuple, bool, str, str]:
    """The picker's edits plus those that keep the script's other availability tests in step
    with it (``placement_guards``); safe only if both are; and what those edits do."""
    guards = placement_guards.plan(model, picker, test, kept)
    handled.update(id(a.value) for a in guards.rewritten)
    reason = "; ".join(r for r in (reason, guards.reason) if r)
    return (*ops, *guards.ops), safe and guards.safe, reason, guards.note


def _titled(title: str, note: str) -> str:
    return f"{title}; and {note}" if note else title


def _message(base: str, safe: bool, reason: str) -> str:
    return base if safe else f"{base} (fix needs review: {reason})"


# --- sites ----------------------------------------------------------------------------
def _if_picker_findings(model, ctx, handled) -> Iterator[Finding]:
    for node in model.nodes_of(ast.If):
        if id(node) in handled or not isinstance(node, ast.If):
            continue
        ip = pickers.if_picker(model, node)
        if ip is None:
            continue
        handled.update(id(n) for n in ast.walk(node))
        e = Emitter(model)
        flow = sites.device_flow(model)
        values = [
            s.value
            for s in ast.walk(node)
            if isinstance(s, ast.Assign)
            and s.targets[0] is not ip.target
            and pickers._target_key(s.targets[0]) == pickers._target_key(ip.target)
        ] + [
            s.value
            for s in ast.walk(node)
            if isinstance(s, ast.Assign) and s.targets[0] is ip.target
        ]
        str_typed = all(sites.is_str_valued(model, v) for v in values)
        uses = flow._store_uses(ip.target, 4, set())
        code, safe, reason = _choose(model, e, ctx.target, uses, str_typed)
        extras = [s for s in ip.extras if not pickers.is_harmless_extra(model, s)]
        if extras:
            safe = False
            more = "; ".join(model.line_text(s.lineno - 1).strip()[:60] for s in extras[:2])
            reason = (reason + "; " if reason else "") + f"the picker block also runs: {more}"
        name = model.segment(ip.target)
        # The block's comments ride on the new statement, so removing the block keeps them.
        comments = "  ".join(sites.comments_in(model, node))
        statement = f"{name} = {code}" + (f"  {comments}" if comments else "")
        ops, safe, reason, note = _with_guards(
            model,
            handled,
            node,
            node.test,
            (ReplaceStatement(model.span(node), statement),),
            safe,
            reason,
        )
        yield _finding(
            model,
            node,
            _message(
                "device picked by an availability test (torch.cuda.is_available() and the like "
                "are False on an XLA host, so this silently trains on the CPU)",
                safe,
                reason,
            ),
            _fix(_titled(f"Use the XLA device: {name} = {code}", note), ops, e, safe, reason),
        )


def _flag_if_findings(model, ctx, handled) -> Iterator[Finding]:
    """``if use_accel: device = torch.accelerator.current_accelerator() else: ...`` with
    ``use_accel = not args.no_accel and torch.accelerator.is_available()``, or the same test
    written inline (``if args.accel and torch.accelerator.is_available():``): the device
    becomes XLA and the test keeps only the user's flag."""
    for node in model.nodes_of(ast.If):
        if id(node) in handled or not isinstance(node, ast.If):
            continue
        if not sites.chooses_device(model, node):
            continue
        named = pickers.mixed_flag(model, node.test) is not None
        inline = pickers.flag_part(model, node.test)
        if not named and not isinstance(inline, list):
            continue
        stmt = next(
            s
            for s in node.body
            if isinstance(s, ast.Assign)
            and any(sites.is_device_name(t) for t in s.targets)
            and pickers.is_device_value(model, s.value)
        )
        handled.update(id(n) for n in ast.walk(stmt))
        e = Emitter(model)
        uses = sites.device_flow(model)._store_uses(stmt.targets[0], 4, set())
        code, safe, reason = _choose(
            model, e, ctx.target, uses, sites.is_str_valued(model, stmt.value)
        )
        if named:
            assert isinstance(node.test, ast.Name)
            flag_ops, flag_safe, flag_reason = sites.flag_name_edit(model, node.test)
            kept = frozenset({node.test.id})
        else:
            assert isinstance(inline, list)
            flags = " and ".join(model.segment(f) for f in inline)
            flag_ops = (Replace(model.span(node.test), flags),)
            # With only the flag tested, the rest of the branch now runs on the XLA host too.
            cuda_only = [
                s for s in node.body if s is not stmt and placement_guards.needs_cuda(model, s)
            ]
            flag_safe = not cuda_only
            flag_reason = (
                "with the test reduced to the flag, the branch also runs "
                f"`{model.line_text(cuda_only[0].lineno - 1).strip()[:60]}` on the XLA host"
                if cuda_only
                else ""
            )
            kept = frozenset()
        safe, reason = safe and flag_safe, "; ".join(r for r in (reason, flag_reason) if r)
        ops, safe, reason, note = _with_guards(
            model,
            handled,
            node,
            node.test,
            (Replace(model.span(stmt.value), code), *flag_ops),
            safe,
            reason,
            kept,
        )
        yield _finding(
            model,
            stmt.value,
            _message(
                f"{model.segment(node.test)} asks whether CUDA/an accelerator is available "
                "(False on an XLA host), so this device is never used there",
                safe,
                reason,
            ),
            _fix(
                _titled(f"Use the XLA device ({code}) and keep only the user's flag", note),
                ops,
                e,
                safe,
                reason,
            ),
        )


def _picker_findings(model, ctx, handled) -> Iterator[Finding]:
    for node in model.nodes_of(ast.IfExp):
        if id(node) in handled:
            continue
        pk = pickers.picker(model, node)
        if pk is None:
            continue
        site = sites.wrapping_device_call(model, node)
        handled.update(id(n) for n in ast.walk(site))
        e = Emitter(model)
        option = sites.option_call(model, site) is not None
        str_typed = option or (site is node and sites.is_str_valued(model, node))
        uses = sites.uses_of_site(model, site)
        if pk.test_kind == "unknown":
            yield _finding(
                model,
                node,
                "device picker with a test that mixes availability checks with other "
                "conditions: on an XLA host the availability part is False",
                manual="choose the XLA device (torch_xla.device()) where CUDA was chosen",
            )
            continue
        if pk.test_kind == "availability":
            code, safe, reason = _choose(model, e, ctx.target, uses, str_typed)
            if option:
                code = XLA_STRING
                e._add(AddImport("import torch_xla"))
            ops, safe, reason, note = _with_guards(
                model, handled, site, node.test, (Replace(model.span(site), code),), safe, reason
            )
            title = f"Use the XLA device: {code}"
        else:
            branch_str = sites.is_str_valued(model, pk.device_branch)
            code, safe, reason = _choose(model, e, ctx.target, uses, branch_str or option)
            if branch_str or option:
                code = XLA_STRING
                e._add(AddImport("import torch_xla"))
            if pk.test_kind == "mixed":
                flags = " and ".join(model.segment(f) for f in pk.flags)
                new = f"{code} if {flags} else {model.segment(node.orelse)}"
                edit = Replace(model.span(node), new)
            else:
                edit = Replace(model.span(pk.device_branch), code)
            ops, note = (edit,), ""
            if pk.test_kind == "mixed":
                ops, safe, reason, note = _with_guards(
                    model, handled, site, node.test, ops, safe, reason
                )
            if pk.test_kind == "mixed-name":
                assert isinstance(node.test, ast.Name)
                flag_ops, flag_safe, flag_reason = sites.flag_name_edit(model, node.test)
                safe, reason = safe and flag_safe, "; ".join(r for r in (reason, flag_reason) if r)
                ops, safe, reason, note = _with_guards(
                    model,
                    handled,
                    site,
                    node.test,
                    (edit, *flag_ops),
                    safe,
                    reason,
                    frozenset({node.test.id}),
                )
                title = f"Use the XLA device where the accelerator was chosen ({code})"
                yield _finding(
                    model,
                    node,
                    _message(
                        "device picker asks whether CUDA/an accelerator is available (False on "
                        "an XLA host): the XLA device is "
                        + xla_api.device(Emitter(model), ctx.target),
                        safe,
                        reason,
                    ),
                    _fix(_titled(title, note), ops, e, safe, reason),
                )
                continue
            title = f"Use the XLA device where CUDA was chosen ({code}); keep the flag"
        yield _finding(
            model,
            node,
            _message(
                "device picker chooses CUDA (or the CPU when CUDA is missing, as on an XLA "
                "host): the XLA device is " + xla_api.device(Emitter(model), ctx.target),
                safe,
                reason,
            ),
            _fix(_titled(title, note), ops, e, safe, reason),
        )


def _value_finding(model, ctx, site: ast.AST, what: str) -> Finding:
    """A device value bound somewhere (assignment, return, option default)."""
    e = Emitter(model)
    option = sites.option_call(model, site) is not None
    uses = sites.uses_of_site(model, site)
    code, safe, reason = _choose(
        model, e, ctx.target, uses, option or sites.is_str_valued(model, site)
    )
    if option:
        code = XLA_STRING
        e._add(AddImport("import torch_xla"))
    return _finding(
        model,
        site,
        _message(
            f"{what}: on XLA the device is {xla_api.device(Emitter(model), ctx.target)}",
            safe,
            reason,
        ),
        _fix(f"Use {code}", (Replace(model.span(site), code),), e, safe, reason),
    )


def _direct_device(model, e, target, call) -> str:
    return sites.device_ref_at(model, call) or xla_api.device(e, target)


def _call_findings(model, ctx, handled) -> Iterator[Finding]:
    target = ctx.target
    for call in model.calls:
        if id(call) in handled:
            continue
        name = model.call_name(call)
        if name == "torch.device" and call.args and pickers.is_device_value(model, call):
            handled.update(id(n) for n in ast.walk(call))
            yield _value_finding(model, ctx, call, "CUDA device")
            continue
        if pickers.is_accelerator_value(model, call):
            site = model.parent(call) if isinstance(model.parent(call), ast.Attribute) else call
            handled.update(id(n) for n in ast.walk(site))
            yield _value_finding(
                model, ctx, site, "torch.accelerator does not know XLA (it picks the CPU)"
            )
            continue
        if method_name(call) == "cuda":
            recv = receiver(call)
            if recv is None or model.qualname(recv) == "torch":
                continue
            e = Emitter(model)
            dev = _direct_device(model, e, target, call)
            code = f"{model.segment(recv)}.to({dev})"
            yield _finding(
                model,
                call,
                f".cuda() moves to a CUDA device: use .to({dev}) for the XLA device",
                _fix(
                    f"Replace .cuda() with .to({dev})",
                    (Replace(model.span(call), code),),
                    e,
                    True,
                    "",
                ),
            )
            continue
        if method_name(call) == "to":
            yield from _to_findings(model, ctx, call, handled)
        kw = keyword(call, "device")
        if kw is not None and id(kw.value) not in handled and is_cuda_string(kw.value):
            e = Emitter(model)
            dev = _direct_device(model, e, target, call)
            handled.add(id(kw.value))
            yield _finding(
                model,
                kw.value,
                f'device="cuda" allocates on a CUDA device: use device={dev}',
                _fix(f"Allocate on {dev}", (Replace(model.span(kw.value), dev),), e, True, ""),
            )


def _to_findings(model, ctx, call: ast.Call, handled) -> Iterator[Finding]:
    target_arg = call.args[0] if call.args else None
    kw = keyword(call, "device")
    for arg in (target_arg, kw.value if kw else None):
        if arg is None or id(arg) in handled:
            continue
        e = Emitter(model)
        if is_cuda_string(arg):
            dev = _direct_device(model, e, ctx.target, call)
            handled.add(id(arg))
            yield _finding(
                model,
                arg,
                f'.to("cuda") moves to a CUDA device: use .to({dev})',
                _fix(f"Move to {dev} instead", (Replace(model.span(arg), dev),), e, True, ""),
            )
        elif sites.rank_index(arg) or sites.is_int_cuda_device(model, arg):
            handled.add(id(arg))
            var = sites.device_ref_at(model, call)
            dev = var or xla_api.device(e, ctx.target)
            reason = (
                ""
                if var
                else "no device variable is bound here; check the index is the CUDA device"
            )
            yield _finding(
                model,
                arg,
                _message(
                    f".to({model.segment(arg)}) moves to CUDA device number {model.segment(arg)}: "
                    f"use .to({dev})",
                    var is not None,
                    reason,
                ),
                _fix(
                    f"Move to {dev} instead",
                    (Replace(model.span(arg), dev),),
                    e,
                    var is not None,
                    reason,
                ),
            )


def _assignment_findings(model, ctx, handled) -> Iterator[Finding]:
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
            yield _value_finding(model, ctx, value, what)
        elif sites.is_int_cuda_device(model, value):
            handled.add(id(value))
            what = f"{model.segment(targets[0])} is a CUDA device number"
            numeric = _read_as_number(model, value)
            if not numeric:
                yield _value_finding(model, ctx, value, what)
                continue
            # ``args.gpu = gpu`` then ``f"cuda:{args.gpu}"`` / ``if args.gpu is not None``: a
            # device object in its place breaks those reads, so no rewrite is offered.
            dev = xla_api.device(Emitter(model), ctx.target)
            yield _finding(
                model,
                value,
                f"{what}, and it is also read as a number or a maybe-None index "
                f"({sites.device_flow(model).describe(numeric, 2)}): it cannot simply become "
                "the XLA device",
                manual=f"Keep the number; place models and tensors on {dev} where this index "
                "chose the CUDA device, and drop the CUDA-only uses.",
            )


def _read_as_number(model: ScriptModel, value: ast.AST) -> list[Use]:
    """Uses of an integer device index that need the number: any use that is not a device,
    and ``is None`` tests (the index may be None; the XLA device never is)."""
    out = []
    for u in sites.uses_of_site(model, value):
        p = model.parent(u.node)
        none_test = isinstance(p, ast.Compare) and any(
            isinstance(c, ast.Constant) and c.value is None for c in (p.left, *p.comparators)
        )
        if not u.ok:
            out.append(u)
        elif none_test:
            out.append(Use(u.node, False, "tested for None"))
    return out


def _option_findings(model, ctx, handled) -> Iterator[Finding]:
    """``add_argument("--device", default="cuda")``: the default is the device."""
    for call in model.method_calls("add_argument"):
        kw = keyword(call, "default")
        if kw is None or id(kw.value) in handled:
            continue
        dest = option_dest(call) or ""
        if "device" not in dest:
            continue
        if pickers.is_device_value(model, kw.value):
            handled.add(id(kw.value))
            yield _value_finding(model, ctx, kw.value, f"--{dest} defaults to a CUDA device")
        elif const_str(kw.value) == "cpu" and sites.mentions_cuda(model, call):
            handled.add(id(kw.value))
            e = Emitter(model)
            e._add(AddImport("import torch_xla"))
            reason = (
                "the script defaults to the CPU and takes the device on the command line; "
                "this makes the XLA device the default (pass --" + dest + " xla otherwise)"
            )
            yield _finding(
                model,
                kw.value,
                _message(f"--{dest} chooses the device (cpu|cuda): on XLA pass xla", False, reason),
                _fix(
                    "Default to the XLA device",
                    (Replace(model.span(kw.value), XLA_STRING),),
                    e,
                    False,
                    reason,
                ),
            )


def _respect_guards(model: ScriptModel, findings: Iterator[Finding]) -> Iterator[Finding]:
    """A rewrite inside ``if torch.cuda.is_available():`` still never runs on an XLA host
    (the test is False there): such fixes need review of the guard too."""
    guards = None
    for f in findings:
        if f.fix is not None and f.fix.safe:
            if guards is None:
                guards = sites.availability_guards(model)
            test = next((t for span, t in guards if span.contains(f.span)), None)
            if test is not None:
                reason = (
                    f"it sits under `if {test}:`, a CUDA availability test that decides "
                    "differently on an XLA host (the guard keeps this code from running there)"
                )
                f = replace(
                    f,
                    message=f"{f.message} (fix needs review: {reason})",
                    fix=replace(f.fix, safe=False, review_reason=reason),
                )
        yield f


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    handled: set[int] = set()
    yield from _respect_guards(model, _if_picker_findings(model, ctx, handled))
    yield from _flag_if_findings(model, ctx, handled)
    yield from _respect_guards(model, _picker_findings(model, ctx, handled))
    yield from _option_findings(model, ctx, handled)
    yield from _respect_guards(model, _call_findings(model, ctx, handled))
    yield from _respect_guards(model, _assignment_findings(model, ctx, handled))
    yield from flag_idioms.flag_findings(model, handled)
    yield from flag_idioms.tensor_type_findings(model, ctx)
    yield from flag_idioms.device_flag_findings(model)
    yield from _helper_findings(model)


DEVICE_HELPER = re.compile(r"^(get_|select_|pick_|choose_)?dev(ice)?$")


def _helper_findings(model: ScriptModel) -> Iterator[Finding]:
    """``x.to(dist_util.dev())``: the device comes from a helper in another module of the
    workspace, out of reach here; say where to look instead of guessing a fix."""
    if model.uses_torch_xla:
        return
    for call in model.calls:
        name = sites.out_of_file_helper(model, call)
        if name is None or not DEVICE_HELPER.match(name.rpartition(".")[2]):
            continue
        parent = model.parent(call)
        if not (isinstance(parent, ast.Call) and method_name(parent) == "to"):
            continue
        yield _finding(
            model,
            call,
            f"the device comes from {name}(), defined outside this file: on an XLA host it must "
            "return the XLA device (a CUDA picker there trains on the CPU or fails)",
            manual=f"make {name}() return torch_xla.device() (or pass the XLA device here)",
        )


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
