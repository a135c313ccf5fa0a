"""XLA101's device pickers, as findings and fixes: the expression and if/else pickers
(``"cuda" if torch.cuda.is_available() else "cpu"``, ``if use_accel: device = ...``), device
values bound anywhere, and the rule that a rewrite under an availability guard needs review.

A rewrite is *safe* only when every use of the device value still works with the XLA device
(``values``) and no other code still decides placement by CUDA availability
(``placement_guards``); otherwise it is offered for review and the message says which use needs
the original value. Returns ``Advice``; the rule turns it into findings.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from . import device_refusals as refusals
from . import device_sites as sites
from . import pickers, placement_guards, xla_api
from .advice import Advice, FixPlan
from .cpu_fallbacks import fallback_for
from .edits import AddImport, Replace
from .guard_rewrites import guard_rewrite
from .line_refs import line_ref
from .model import Emitter, ScriptModel
from .node_helpers import dotted
from .option_guards import OptionGuards, option_guards
from .span import Span
from .values import Use
from .workspace_option_tests import cuda_string_tests
from .xla_api import Target

XLA_STRING = '"xla"'


def advice(model, node, message, fix=None, manual=None) -> Advice:
    return Advice(message, model.span(node), fix=fix, manual=manual)


def choose(
    model: ScriptModel, e: Emitter, target: Target, uses: list[Use], str_typed: bool
) -> tuple[str, bool, str, tuple]:
    """Replacement code, whether it is safe, why not, and the edits of uses that change
    with it: the XLA device when every use takes a device; else (for review) the string
    ``"xla"`` where a string was expected."""
    follow, uses = _generators_follow(model, uses)
    bad = [u for u in uses if not u.ok]
    if not bad:
        return xla_api.device(e, target), True, "", follow
    reason = "the device value is used where the original matters: " + sites.device_flow(
        model
    ).describe(bad)
    if str_typed:
        e._add(AddImport("import torch_xla"))
        return XLA_STRING, False, reason, follow
    return xla_api.device(e, target), False, reason, follow


def _generators_follow(model: ScriptModel, uses: list[Use]) -> tuple[tuple, list[Use]]:
    """``torch.Generator(device=device)`` refuses the XLA device: the same fix makes it a CPU
    generator (``device_refusals``), and the use needs review only if the script reads the
    generator's device or restores a state into it."""
    follow: list[Replace] = []
    kept: list[Use] = []
    for u in uses:
        gen = None if u.ok else refusals.generator_call(model, u.node)
        if gen is None:
            kept.append(u)
            continue
        op, why = refusals.cpu_generator(model, gen, u.node)
        follow.append(op)
        if why:
            kept.append(Use(u.node, False, why))
    return tuple(follow), kept


def fix_plan(title: str, ops: tuple, e: Emitter, safe: bool, reason: str) -> FixPlan:
    return FixPlan(title, (*ops, *e.imports), safe=safe, review_reason=reason)


def with_guards(
    model, handled, picker, test, ops: tuple, safe: bool, reason: str, kept=frozenset()
) -> tuple[tuple, bool, str, str]:
    """The picker's edits plus those that keep the script's other availability tests in step
    with it (``placement_guards``); safe only if both are; and what those edits do."""
    guards = placement_guards.plan(model, picker, test, kept)
    handled.update(id(a.value) for a in guards.rewritten)
    reason = "; ".join(r for r in (reason, guards.reason) if r)
    return (*ops, *guards.ops), safe and guards.safe, reason, guards.note


def titled(title: str, note: str) -> str:
    return f"{title}; and {note}" if note else title


def message(base: str, safe: bool, reason: str) -> str:
    return base if safe else f"{base} (fix needs review: {reason})"


def picker_advice(model, target: Target, handled) -> Iterator[Advice]:
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
            external = _external_flag_advice(model, node) or _attribute_flag_advice(model, node)
            if external is not None:
                yield external
                continue
            yield advice(
                model,
                node,
                "device picker with a test that mixes availability checks with other "
                "conditions: on an XLA host the availability part is False",
                manual="choose the XLA device (torch_xla.device()) where CUDA was chosen",
            )
            continue
        if pk.test_kind == "configured":
            shown = model.segment(pk.device_branch)
            yield advice(
                model,
                node,
                f"device picker takes `{shown}` only where CUDA is available and the CPU "
                "elsewhere: on an XLA host the availability test is False, so the script "
                "trains on the CPU whatever the configuration names",
                manual=f"Choose the XLA device (torch_xla.device()) where `{shown}` names the "
                "accelerator, e.g. make the configuration name it and test for it instead of "
                "CUDA; no fix here: what the configuration holds is not in this file",
            )
            continue
        if pk.test_kind == "tensor":
            held = pickers.tensor_on_cuda(node.test)
            assert held is not None
            code = f"{model.segment(held)}.device"
            yield advice(
                model,
                node,
                f"device picker asks whether `{model.segment(held)}` is on CUDA: an XLA tensor "
                "answers False, so this picks the CPU beside it; the device it means is "
                f"`{code}`",
                fix_plan(
                    f"Use the tensor's own device: {code}",
                    (Replace(model.span(site), code),),
                    e,
                    True,
                    "",
                ),
            )
            continue
        if pk.test_kind == "availability":
            code, safe, reason, follow = choose(model, e, target, uses, str_typed)
            if option:
                code = XLA_STRING
                e._add(AddImport("import torch_xla"))
            ops, safe, reason, note = with_guards(
                model,
                handled,
                site,
                node.test,
                (Replace(model.span(site), code), *follow),
                safe,
                reason,
            )
            title = f"Use the XLA device: {code}"
        else:
            branch_str = sites.is_str_valued(model, pk.device_branch)
            code, safe, reason, follow = choose(model, e, target, uses, branch_str or option)
            if branch_str or option:
                code = XLA_STRING
                e._add(AddImport("import torch_xla"))
            if pk.test_kind == "mixed":
                flags = " and ".join(model.segment(f) for f in pk.flags)
                new = f"{code} if {flags} else {model.segment(node.orelse)}"
                edit = Replace(model.span(node), new)
            else:
                edit = Replace(model.span(pk.device_branch), code)
            ops, note = (edit, *follow), ""
            if pk.test_kind == "mixed":
                ops, safe, reason, note = with_guards(
                    model, handled, site, node.test, ops, safe, reason
                )
            if pk.test_kind == "mixed-name":
                assert isinstance(node.test, ast.Name)
                flag_ops, flag_safe, flag_reason = sites.flag_name_edit(model, node.test)
                handled.update(id(a.value) for a in model.assignments.get(node.test.id, ()))
                safe, reason = safe and flag_safe, "; ".join(r for r in (reason, flag_reason) if r)
                ops, safe, reason, note = with_guards(
                    model,
                    handled,
                    site,
                    node.test,
                    (edit, *flag_ops, *follow),
                    safe,
                    reason,
                    frozenset({node.test.id}),
                )
                title = f"Use the XLA device where the accelerator was chosen ({code})"
                yield advice(
                    model,
                    node,
                    message(
                        "device picker asks whether CUDA/an accelerator is available (False on "
                        "an XLA host): the XLA device is " + xla_api.device(Emitter(model), target),
                        safe,
                        reason,
                    ),
                    fix_plan(titled(title, note), ops, e, safe, reason),
                )
                continue
            title = f"Use the XLA device where CUDA was chosen ({code}); keep the flag"
        chooses = (
            f"device picker chooses CUDA or the CPU by `{model.segment(node.test)[:60]}` (the "
            "user's choice, kept)"
            if pk.test_kind == "flag"
            else "device picker chooses CUDA (or the CPU when CUDA is missing, as on an XLA host)"
        )
        yield advice(
            model,
            node,
            message(
                f"{chooses}: the XLA device is " + xla_api.device(Emitter(model), target),
                safe,
                reason,
            ),
            fix_plan(titled(title, note), ops, e, safe, reason),
        )


def _external_flag_advice(model, node: ast.IfExp) -> Advice | None:
    """``"cuda" if a.gpu else "cpu"`` where a sibling module's options helper sets ``a.gpu``
    from ``torch.cuda.is_available()``: the flag is False on every XLA host, and the edit
    that fixes it is in the other file, so this is advice to follow by hand."""
    for n in ast.walk(node.test):
        found = pickers.external_flag(model, n)
        if found is None:
            continue
        flag = model.segment(n)
        where = f"{Path(found.module).name} line {found.line}"
        keep = (
            f"keep the user's flag only (`{found.kept}`)"
            if found.kept
            else f"make {n.attr} true on the XLA host"
        )
        return advice(
            model,
            node,
            f"device picker chooses CUDA by `{flag}`, which {where} sets from "
            "torch.cuda.is_available(): False on an XLA host, so converting this picker alone "
            "would still train on the CPU",
            manual=f"In {found.module} line {found.line}, {keep}; then choose the XLA device "
            '("xla", or torch_xla.device()) where this picker chose CUDA.',
        )
    return None


def _attribute_flag_advice(model, node: ast.IfExp) -> Advice | None:
    """``"cuda" if args.cuda else "cpu"`` after ``args.cuda = torch.cuda.is_available()``
    (held-out 92's NER script): the flag is this file's availability answer, reported where it
    is set (XLA101 there); this picker follows it, so it is advice, not a mixed test."""
    flags = pickers.attribute_flags(model)
    for n in ast.walk(node.test):
        if not (isinstance(n, ast.Attribute) and n.attr in flags):
            continue
        store = flags[n.attr]
        flag = model.segment(n)
        return advice(
            model,
            node,
            f"device picker chooses CUDA by `{flag}`, which line {line_ref(store.lineno)} sets "
            "from torch.cuda.is_available(): False on an XLA host, so the script trains on "
            "the CPU there",
            manual=f"Make {flag} true on the XLA host (line {line_ref(store.lineno)}, XLA101 "
            "there), then choose the XLA device (torch_xla.device()) where this picker chose "
            "CUDA.",
        )
    return None


def value_advice(model, target: Target, site: ast.AST, what: str) -> Advice:
    """A device value bound somewhere (assignment, return, option or parameter default)."""
    e = Emitter(model)
    # A parameter's default is evaluated when the ``def`` runs, at import: "xla" there, not a
    # runtime call (which would start the XLA runtime in a launcher's parent process).
    option = (
        sites.option_call(model, site) is not None
        or sites.parameter_with_default(model, site) is not None
    )
    uses = sites.uses_of_site(model, site)
    note = ""
    code, safe, reason, follow = choose(
        model, e, target, uses, option or sites.is_str_valued(model, site)
    )
    if option:
        code = XLA_STRING
        e._add(AddImport("import torch_xla"))
        call = sites.option_call(model, site)
        dest = sites.option_dest(call) if call is not None else None
        guards = option_guards(model, uses, dest) if dest else OptionGuards()
        if guards.ops:
            follow = (*follow, *guards.ops)
            shown = " and ".join(f"line {line_ref(n)}" for n in guards.lines)
            note = (
                f"; {shown} uses it only where CUDA is available (else the CPU), which no XLA "
                "host is, so the fix drops that test too"
            )
            if safe and not guards.safe:
                safe, reason = False, guards.reason
        if safe and dest and (tests := cuda_string_tests(model, dest)):
            safe, reason = False, _tested_elsewhere(model, dest, tests)
    elif _str_annotated_default(model, site):
        # ``device: str = "cuda"`` in a config dataclass (CORL's pyrallis configs, held-out
        # 96): the field is declared a string, and the config library that fills and dumps it
        # refuses a torch.device ("No parser for object xla:0", measured): keep a string.
        code = XLA_STRING
        e._add(AddImport("import torch_xla"))
    elif safe and (fallback := _fallback_reason(model, site)):
        safe, reason = False, fallback
    elif safe and (escaped := _read_elsewhere(model, site, uses)):
        # ``config.device = 'cuda'`` in a config module (hysts' defaults.py, held-out 25): every
        # read is in other files, so no use proves the device object fits (a yacs node refuses
        # non-primitive values; ``config.device != 'cpu'`` compares strings).
        safe, reason = False, escaped
        if sites.is_str_valued(model, site):
            code = XLA_STRING
            e._add(AddImport("import torch_xla"))
    return advice(
        model,
        site,
        message(
            f"{what}: on XLA the device is {xla_api.device(Emitter(model), target)}{note}",
            safe,
            reason,
        ),
        fix_plan(f"Use {code}", (Replace(model.span(site), code), *follow), e, safe, reason),
    )


def _str_annotated_default(model: ScriptModel, site: ast.AST) -> bool:
    """``site`` is the value of a ``name: str = ...`` declaration (``Optional[str]`` and
    ``str | None`` too)."""
    stmt = model.parent(site)
    if not (isinstance(stmt, ast.AnnAssign) and stmt.value is site):
        return False
    text = model.segment(stmt.annotation).replace(" ", "")
    return text in {"str", "Optional[str]", "str|None", "None|str", "typing.Optional[str]"}


def _tested_elsewhere(model: ScriptModel, dest: str, tests: list[tuple[Path, int, str]]) -> str:
    """pmf_cvpr22 (held-out 86): ``if args.device != 'cuda': args.distributed = False`` in
    utils/deit_util.py; with the "xla" default no rank starts a process group, silently."""
    here = Path(model.path).resolve().parent
    shown = []
    for path, line, text in tests[:2]:
        try:
            name = os.path.relpath(path, here)
        except ValueError:
            name = str(path)
        shown.append(f"{name} line {line} `{text[:60]}`")
    more = f" and {len(tests) - 2} more" if len(tests) > 2 else ""
    return (
        f"the `{dest}` option is tested against a CUDA string in other modules of the "
        f'project ({"; ".join(shown)}{more}): with the "xla" default those tests decide the '
        "other way; change them with this default"
    )


def _fallback_reason(model: ScriptModel, site: ast.AST) -> str:
    """``device = "cuda"`` that a later ``if not torch.cuda.is_available(): device = "cpu"``
    resets on every XLA host (``semantic.cpu_fallbacks``)."""
    stmt = model.parent(site)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return ""
    name = dotted(stmt.targets[0])
    fb = fallback_for(model, name) if name is not None else None
    if fb is None or fb.assign is stmt:
        return ""
    return (
        f"line {fb.assign.lineno} sets {name} back to the CPU when CUDA is missing, which is "
        "every XLA host: drop that fallback too, or this change places nothing on XLA"
    )


def _read_elsewhere(model: ScriptModel, site: ast.AST, uses: list) -> str:
    """Why a device stored in an attribute of an object (not ``self``) that this file never
    reads cannot be proven to fit its uses ("" when it is read here, or is no such store)."""
    stmt = model.parent(site)
    if uses or not isinstance(stmt, ast.Assign) or stmt.value is not site:
        return ""
    target = stmt.targets[0] if len(stmt.targets) == 1 else None
    if not (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id not in {"self", "cls"}
    ):
        return ""
    shown = model.segment(target)
    return (
        f"{shown} is not read in this file, so any reader is elsewhere (a settings object "
        'handed on): the value must suit every such reader, so the string "xla" is offered (torch.device("xla") and '
        '`.to("xla")` take it); check the readers\' comparisons with "cuda"'
    )


UNDER_GUARD = "it sits under"


def waits_on_a_guard(a: Advice) -> bool:
    """A move made review by ``respect_guards``: on an XLA host its guard keeps it from running,
    so what it places stays on the CPU."""
    return a.fix is not None and not a.fix.safe and a.fix.review_reason.startswith(UNDER_GUARD)


def _stale_optimizer_note(model: ScriptModel, span: Span) -> str:
    """Where XLA109 pairs this move with an optimizer built before it (held-out 53,
    RepDistiller: SGD over ``trainable_list`` and then ``if torch.cuda.is_available():
    module_list.cuda()``): the rewritten guard makes the move run on XLA, where the optimizer
    then keeps updating the CPU copies; the reviewer must see that here too."""
    from .accelerate_prepare import stale_optimizers  # noqa: PLC0415 (imports the model)

    stale = model.memo(("handed_optimizers", "stale"), lambda: stale_optimizers(model))
    for build, move in stale:
        if model.span(move.node).contains(span) or span.contains(model.span(move.node)):
            line = getattr(build.node, "lineno", None)
            if line is not None:
                return (
                    f"; and the optimizer built on line {line_ref(line)} takes the parameters "
                    "this moves before the move (XLA109): on XLA it would keep updating the CPU "
                    "copies and the model would never train, so move first"
                )
    return ""


def respect_guards(
    model: ScriptModel, findings: Iterator[Advice], rewrite: bool = False
) -> Iterator[Advice]:
    """A rewrite inside ``if torch.cuda.is_available():`` still never runs on an XLA host
    (the test is False there): such fixes need review of the guard too. With ``rewrite``
    (device moves), the fix also makes the test true where that is all the block needs
    (guard_rewrites.py): applied alone, a move that never runs converts nothing."""
    guards = None
    for f in findings:
        if f.fix is not None and f.fix.safe:
            if guards is None:
                guards = sites.availability_guards(model)
            # The innermost guard: in ``if is_xpu_available(): ... elif torch.cuda.is_available():
            # model.to("cuda")`` the move sits under the ``elif`` (llama-recipes, held-out 24).
            around = [(span, t, k) for span, t, k in guards if span.contains(f.span)]
            inner = max(around, key=lambda g: (g[0].start.line, g[0].start.col), default=None)
            guard = (inner[1], inner[2]) if inner is not None else None
            if guard is not None:
                test, kind = guard
                reason = (
                    f"{UNDER_GUARD} `if {test}:`, {kind} that decides "
                    "differently on an XLA host (the guard keeps this code from running there)"
                )
                fix = replace(f.fix, safe=False, review_reason=reason)
                rewritten = guard_rewrite(model, f.span) if rewrite else None
                if rewritten is not None:
                    op, code = rewritten
                    reason = (
                        f"{UNDER_GUARD} `if {test}:`, {kind} that is False on an XLA host: "
                        f"the fix also makes that test `{code}` (what a CUDA host computed) so "
                        "the block runs there; check the rest of the block does what it did "
                        "on CUDA"
                    ) + _stale_optimizer_note(model, f.span)
                    fix = replace(
                        fix,
                        title=f"{fix.title}; test `{code}` for `{test}`",
                        ops=(*fix.ops, op),
                        review_reason=reason,
                    )
                f = replace(f, message=f"{f.message} (fix needs review: {reason})", fix=fix)
        elif f.fix is not None and f.message.endswith(")") and UNDER_GUARD not in f.message:
            if guards is None:
                guards = sites.availability_guards(model)
            f = _guard_noted(model, f, guards)
        yield f


def _asks_the_host(model: ScriptModel, span: Span, text: str) -> bool:
    """The ``if`` with test ``text`` around ``span`` asks the host (a CUDA query, or a name
    bound to one, in one of its ``and``/``or`` parts), not only the user (``if args.cuda:``)."""
    for node in model.nodes_of(ast.If):
        assert isinstance(node, ast.If)
        if model.segment(node.test) != text or not model.span(node).contains(span):
            continue
        parts = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
        return any(pickers.is_availability(model, p) for p in parts)
    return False


def _guard_noted(model: ScriptModel, f: Advice, guards: list[tuple[Span, str, str]]) -> Advice:
    """A review fix under an availability test: its reason also names the outermost such
    test (CyCLIP's ``if ngpus == 0 or options.device == "cpu":`` with ``ngpus =
    torch.cuda.device_count()``, held-out 132: on an XLA host the count is 0 and the branch
    that picks CUDA never runs, whatever this fix writes there)."""
    assert f.fix is not None
    around = [
        (span, t, k)
        for span, t, k in guards
        if span.contains(f.span) and (k.startswith("a test of") or _asks_the_host(model, span, t))
    ]
    outer = min(around, key=lambda g: (g[0].start.line, g[0].start.col), default=None)
    if outer is None or "(fix needs review: " not in f.message:
        return f
    note = (
        f"{UNDER_GUARD} `if {outer[1]}:`, {outer[2]} that decides differently on an XLA host "
        "(check the branch still runs there once converted)"
    )
    fix = replace(f.fix, review_reason=f"{f.fix.review_reason}; {note}")
    return replace(f, message=f"{f.message[:-1]}; {note})", fix=fix)


def int_device_move_advice(
    model: ScriptModel, target_api: Target, definitions: list[Advice]
) -> Iterator[Advice]:
    """``ema = deepcopy(model).to(device)`` after ``device = rank % torch.cuda.device_count()``:
    a model placed on a CUDA device number. Said where the model is placed (that is where a
    reader looks), with the fix of the index's own finding (``definitions``, by the span of
    the value): converting the index is what moves the model, and it is exactly as safe."""
    by_span = {a.span: a for a in definitions}
    for call in model.method_calls("to"):
        target = (
            call.args[0]
            if call.args
            else next((k.value for k in call.keywords if k.arg == "device"), None)
        )
        if target is None:
            continue
        value = sites.int_device_binding(model, target)
        if value is None or not sites.places_a_module(model, receiver_of(call)):
            continue
        definition = by_span.get(model.span(value))
        if definition is None:
            continue  # the index is not reported (a guard decided it): nothing to point at
        name, line = model.segment(target), value.lineno
        dev = xla_api.device(Emitter(model), target_api)
        base = (
            f".to({name}) places {model.segment(receiver_of(call))} on a CUDA device number "
            f"(`{name} = {model.segment(value)}`, line {line_ref(line)}): on XLA the model goes to {dev}"
        )
        plan = definition.fix
        if plan is None:
            yield advice(model, target, base, manual=definition.manual)
            continue
        yield advice(
            model,
            target,
            message(base, plan.safe, plan.review_reason),
            replace(plan, title=f"{plan.title} for {name} at line {line_ref(line)}"),
        )


def receiver_of(call: ast.Call) -> ast.AST | None:
    return call.func.value if isinstance(call.func, ast.Attribute) else None
