"""XLA101: the script targets a CUDA device.

Finds every way a script picks CUDA (literals, ``torch.device``, ``.cuda()``, availability
and flag pickers, ``torch.accelerator``, if/elif picker blocks, argparse defaults, device
attributes, integer CUDA indices) and rewrites it to the XLA device. A rewrite is *safe* only
when every use of the value still works with the new one (``semantic.values``); otherwise the
fix is offered for review and the finding says which use needs the original value.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import replace

from ..semantic import pickers, xla_api
from ..semantic.model import (
    Emitter,
    ScriptModel,
    const_str,
    is_cuda_string,
    keyword,
    method_name,
    receiver,
)
from ..semantic.values import DeviceFlow, Use, option_dest
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
    Span,
    Target,
)

CODE = "XLA101"
XLA_STRING = '"xla"'
RANK_NAME = re.compile(r"(^|_)(local_rank|rank|gpu|gpu_id|device_id|local_device)$")


def _flow(model: ScriptModel) -> DeviceFlow:
    # One def-use index per parse, shared by every site of this rule.
    flow = model.__dict__.get("_xla_lens_device_flow")
    if flow is None:
        flow = model.__dict__["_xla_lens_device_flow"] = DeviceFlow(model)
    return flow


def _device_ref_at(model: ScriptModel, e: Emitter, target: Target, node: ast.AST) -> str | None:
    """The device variable if it is visibly bound where ``node`` runs, else None."""
    var = model.device_variable
    if var is not None:
        fn = model.enclosing_function(node)
        for a in model.assignments.get(var, []):
            afn = model.enclosing_function(a)
            before = (a.lineno, a.col_offset) < (node.lineno, node.col_offset)
            if afn is None and (fn is not None or before):
                return var
            if afn is not None and afn is fn and before:
                return var
    return None


def _finding(model, node, message, fix=None, manual=None) -> Finding:
    return Finding(CODE, message, model.span(node), Severity.WARNING, fix=fix, manual=manual)


def _is_str_valued(model: ScriptModel, node: ast.AST) -> bool:
    if isinstance(node, ast.IfExp):
        return _is_str_valued(model, node.body) and _is_str_valued(model, node.orelse)
    if isinstance(node, ast.Attribute) and node.attr == "type":
        return True
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) and node.func.attr == "format"
    return isinstance(node, ast.JoinedStr) or const_str(node) is not None


def _choose(
    model: ScriptModel, e: Emitter, target: Target, uses: list[Use], str_typed: bool
) -> tuple[str, bool, str]:
    """Replacement code, whether it is safe, and why not: the XLA device when every use
    takes a device; else (for review) the string ``"xla"`` where a string was expected."""
    bad = [u for u in uses if not u.ok]
    if not bad:
        return xla_api.device(e, target), True, ""
    reason = "the device value is used where the original matters: " + _flow(model).describe(bad)
    if str_typed:
        e._add(AddImport("import torch_xla"))
        return XLA_STRING, False, reason
    return xla_api.device(e, target), False, reason


def _fix(title: str, ops: tuple, e: Emitter, safe: bool, reason: str) -> Fix:
    return Fix(title, (*ops, *e.imports), safe=safe, review_reason=reason)


def _message(base: str, safe: bool, reason: str) -> str:
    return base if safe else f"{base} (fix needs review: {reason})"


def _comments(model: ScriptModel, node: ast.stmt) -> list[str]:
    """Comments inside a statement, so a rewrite that replaces it keeps them."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    text = "".join(model.lines[first : last + 1])
    found: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found.append(tok.string)
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


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
        flow = _flow(model)
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
        str_typed = all(_is_str_valued(model, v) for v in values)
        uses = flow._store_uses(ip.target, 4, set())
        code, safe, reason = _choose(model, e, ctx.target, uses, str_typed)
        extras = [s for s in ip.extras if not pickers.is_harmless_extra(model, s)]
        if extras:
            safe = False
            more = "; ".join(model.line_text(s.lineno - 1).strip()[:60] for s in extras[:2])
            reason = (reason + "; " if reason else "") + f"the picker block also runs: {more}"
        name = model.segment(ip.target)
        # The block's comments ride on the new statement, so removing the block keeps them.
        comments = "  ".join(_comments(model, node))
        statement = f"{name} = {code}" + (f"  {comments}" if comments else "")
        yield _finding(
            model,
            node,
            _message(
                "device picked by an availability test (torch.cuda.is_available() and the like "
                "are False on an XLA host, so this silently trains on the CPU)",
                safe,
                reason,
            ),
            _fix(
                f"Use the XLA device: {name} = {code}",
                (ReplaceStatement(model.span(node), statement),),
                e,
                safe,
                reason,
            ),
        )


def _flag_name_edit(model: ScriptModel, test: ast.AST) -> tuple[tuple, bool, str]:
    """Drop the availability part of ``use_accel = flag and avail()``; safe only when the
    flag only chooses the device (its other uses would now run on XLA hosts too)."""
    found = pickers.mixed_flag(model, test)
    assert found is not None and isinstance(test, ast.Name)
    assign, flags = found
    ops = (Replace(model.span(assign.value), " and ".join(model.segment(f) for f in flags)),)
    others = []
    for n in model.nodes_of(ast.Name):
        if isinstance(n, ast.Name) and n.id == test.id and isinstance(n.ctx, ast.Load):
            p = model.parent(n)
            if isinstance(p, ast.If | ast.IfExp) and p.test is n and _chooses_device(model, p):
                continue
            others.append(n)
    if not others:
        return ops, True, ""
    lines = ", ".join(str(n.lineno) for n in others[:3])
    return ops, False, f"{test.id} also decides other code (line {lines}), which will now run"


def _chooses_device(model: ScriptModel, node: ast.If | ast.IfExp) -> bool:
    if isinstance(node, ast.IfExp):
        return pickers.picker(model, node) is not None
    return any(
        isinstance(s, ast.Assign)
        and any(_is_device_name(t) for t in s.targets)
        and pickers.is_device_value(model, s.value)
        for s in node.body
    )


def _flag_if_findings(model, ctx, handled) -> Iterator[Finding]:
    """``if use_accel: device = torch.accelerator.current_accelerator() else: ...`` with
    ``use_accel = not args.no_accel and torch.accelerator.is_available()``."""
    for node in model.nodes_of(ast.If):
        if id(node) in handled or not isinstance(node, ast.If):
            continue
        if pickers.mixed_flag(model, node.test) is None or not _chooses_device(model, node):
            continue
        stmt = next(
            s
            for s in node.body
            if isinstance(s, ast.Assign)
            and any(_is_device_name(t) for t in s.targets)
            and pickers.is_device_value(model, s.value)
        )
        handled.update(id(n) for n in ast.walk(stmt))
        e = Emitter(model)
        uses = _flow(model)._store_uses(stmt.targets[0], 4, set())
        code, safe, reason = _choose(model, e, ctx.target, uses, _is_str_valued(model, stmt.value))
        flag_ops, flag_safe, flag_reason = _flag_name_edit(model, node.test)
        safe, reason = safe and flag_safe, "; ".join(r for r in (reason, flag_reason) if r)
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
                f"Use the XLA device ({code}) and keep only the user's flag",
                (Replace(model.span(stmt.value), code), *flag_ops),
                e,
                safe,
                reason,
            ),
        )


def _outer(model: ScriptModel, node: ast.AST) -> ast.AST:
    """``torch.device(<node>)`` when the picker is wrapped in one, else ``node``."""
    p = model.parent(node)
    if isinstance(p, ast.Call) and model.call_name(p) == "torch.device" and p.args == [node]:
        return p
    return node


def _option_call(model: ScriptModel, node: ast.AST) -> ast.Call | None:
    p = model.parent(node)
    if isinstance(p, ast.keyword) and p.arg == "default":
        call = model.parent(p)
        if isinstance(call, ast.Call) and method_name(call) == "add_argument":
            return call
    return None


def _uses_of_site(model: ScriptModel, site: ast.AST) -> list[Use]:
    flow = _flow(model)
    option = _option_call(model, site)
    if option is not None:
        dest = option_dest(option)
        return flow.uses_of_option(dest) if dest else [Use(site, False, "option not followed")]
    return flow.uses_of_expr(site)


def _picker_findings(model, ctx, handled) -> Iterator[Finding]:
    for node in model.nodes_of(ast.IfExp):
        if id(node) in handled:
            continue
        pk = pickers.picker(model, node)
        if pk is None:
            continue
        site = _outer(model, node)
        handled.update(id(n) for n in ast.walk(site))
        e = Emitter(model)
        option = _option_call(model, site) is not None
        str_typed = option or (site is node and _is_str_valued(model, node))
        uses = _uses_of_site(model, site)
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
            edit = Replace(model.span(site), code)
            title = f"Use the XLA device: {code}"
        else:
            branch_str = _is_str_valued(model, pk.device_branch)
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
            if pk.test_kind == "mixed-name":
                flag_ops, flag_safe, flag_reason = _flag_name_edit(model, node.test)
                ops = (edit, *flag_ops)
                safe, reason = safe and flag_safe, "; ".join(r for r in (reason, flag_reason) if r)
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
                    _fix(title, ops, e, safe, reason),
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
            _fix(title, (edit,), e, safe, reason),
        )


def _value_finding(model, ctx, site: ast.AST, what: str) -> Finding:
    """A device value bound somewhere (assignment, return, option default)."""
    e = Emitter(model)
    option = _option_call(model, site) is not None
    uses = _uses_of_site(model, site)
    code, safe, reason = _choose(model, e, ctx.target, uses, option or _is_str_valued(model, site))
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
    return _device_ref_at(model, e, target, call) or xla_api.device(e, target)


def _rank_index(node: ast.AST | None) -> bool:
    """An integer CUDA index by name: ``local_rank``, ``args.gpu``, ``rank``."""
    if isinstance(node, ast.Name):
        return bool(RANK_NAME.search(node.id.lower()))
    if isinstance(node, ast.Attribute):
        return bool(RANK_NAME.search(node.attr.lower()))
    return False


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
        elif _rank_index(arg):
            handled.add(id(arg))
            var = _device_ref_at(model, e, ctx.target, call)
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


def _is_device_name(target: ast.AST) -> bool:
    key = pickers._target_key(target)
    if key is None and isinstance(target, ast.Attribute):
        key = target.attr
    return key is not None and "dev" in key.lower()


def _assignment_findings(model, ctx, handled) -> Iterator[Finding]:
    for node in model.nodes_of(ast.Assign, ast.AnnAssign):
        value = node.value
        if value is None or id(value) in handled:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(_is_device_name(t) for t in targets):
            continue
        if pickers.is_device_value(model, value):
            handled.add(id(value))
            what = f"{model.segment(targets[0])} names a CUDA device"
            yield _value_finding(model, ctx, value, what)
        elif _is_int_cuda_device(model, value):
            handled.add(id(value))
            what = f"{model.segment(targets[0])} is a CUDA device number"
            yield _value_finding(model, ctx, value, what)


def _is_int_cuda_device(model: ScriptModel, value: ast.AST) -> bool:
    """``rank % torch.cuda.device_count()``, ``local_rank``: a CUDA index kept as the device."""
    if _rank_index(value):
        return True
    return isinstance(value, ast.BinOp) and any(
        isinstance(n, ast.Call) and model.call_name(n) == "torch.cuda.device_count"
        for n in ast.walk(value)
    )


def _flag_findings(model: ScriptModel, handled: set[int]) -> Iterator[Finding]:
    """``cuda = True if torch.cuda.is_available() else False``: a flag that turns CUDA
    placement on; on an XLA host it is False, so everything it guards stays on the CPU."""
    for node in model.nodes_of(ast.Assign):
        if not isinstance(node, ast.Assign) or id(node.value) in handled:
            continue
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        name = node.targets[0].id
        if not any(k in name.lower() for k in ("cuda", "gpu")):
            continue
        if not pickers.is_availability(model, _bool_value(node.value)):
            continue
        tests = [
            n
            for n in model.nodes_of(ast.Name)
            if isinstance(n, ast.Name)
            and n.id == name
            and isinstance(model.parent(n), ast.If | ast.IfExp)
            and model.parent(n).test is n  # type: ignore[union-attr]
            and not _chooses_device(model, model.parent(n))  # type: ignore[arg-type]
        ]
        if not tests:
            continue
        lines = ", ".join(str(t.lineno) for t in tests[:4])
        yield _finding(
            model,
            node.value,
            f"{name} is whether CUDA is available (False on an XLA host): the CUDA placement "
            f"it turns on (line {lines}) never runs there",
            manual=f"place on the XLA device where {name} is true (torch_xla.device())",
        )


def _bool_value(node: ast.AST) -> ast.AST:
    """``True if test else False`` is ``test``."""
    if (
        isinstance(node, ast.IfExp)
        and isinstance(node.body, ast.Constant)
        and node.body.value is True
        and isinstance(node.orelse, ast.Constant)
        and node.orelse.value is False
    ):
        return node.test
    return node


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
        elif const_str(kw.value) == "cpu" and _mentions_cuda(model, call):
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


def _mentions_cuda(model: ScriptModel, call: ast.Call) -> bool:
    return any(
        "cuda" in (const_str(k.value) or "") for k in call.keywords if k.arg in {"help", "choices"}
    ) or any("cuda" in model.segment(k.value) for k in call.keywords if k.arg == "choices")


def _availability_guards(model: ScriptModel) -> list[tuple[Span, str]]:
    """Blocks that run only when CUDA (or another accelerator) is available."""
    guards = []
    for node in model.nodes_of(ast.If):
        if isinstance(node, ast.If) and pickers.mentions_availability(model, node.test):
            test = model.segment(node.test)
            for stmt in (*node.body, *node.orelse):
                guards.append((model.span(stmt), test))
    return guards


def _respect_guards(model: ScriptModel, findings: Iterator[Finding]) -> Iterator[Finding]:
    """A rewrite inside ``if torch.cuda.is_available():`` still never runs on an XLA host
    (the test is False there): such fixes need review of the guard too."""
    guards = None
    for f in findings:
        if f.fix is not None and f.fix.safe:
            if guards is None:
                guards = _availability_guards(model)
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
    yield from _flag_findings(model, handled)


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
