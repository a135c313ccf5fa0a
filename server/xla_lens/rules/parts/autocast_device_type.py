"""XLA102 at the line that derives an autocast's device type by looking for "cuda".

``device_type = "cuda" if "cuda" in device else "cpu"`` then
``ctx = nullcontext() if device_type == "cpu" else torch.autocast(device_type=device_type)``:
once ``device`` is the XLA device the test is false, ``device_type`` is "cpu", and the
autocast is never entered (or is a CPU autocast, which casts nothing on XLA tensors). The
conversion would silently train in fp32, whatever the autocast call is rewritten to.

The fix adds an XLA case to the choice, written like the CUDA one:
``"cuda" if "cuda" in device else "xla" if "xla" in device else "cpu"``. For every device the
original ran on the value is unchanged; on an XLA device it is "xla" where it was "cpu".
That is safe only when every read of the name agrees: the autocast's device type, a test that
chooses the autocast the same way for "xla" as for "cuda", a test whose outcome is the same
for "xla" as for "cpu" (``== "cuda"``), a print, or a function of this file whose parameter
is read the same ways. Anything else (a function of another module, a "cpu"-only branch) is
named in a review reason.

A test that lets only "cuda" choose the autocast (llm.c's ``autocast(...) if device_type ==
"cuda" else nullcontext()``) is rewritten by the same fix to ``device_type in ("cuda", "xla")``:
the same outcome for every value the name had, and the autocast's for "xla". Without it the
"xla" case alone would leave the autocast off with nothing left to say so. A name that already
has its "xla" case while such a test remains is reported at the test.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from ...semantic.calls import callee, parameter_for
from ...semantic.model import ScriptModel, arg_or_keyword, const_str
from ...semantic.precision import AUTOCASTS, device_strings
from ..base import Finding, Fix, Replace, RuleContext, Severity

CODE = "XLA102"
MAX_DEPTH = 3  # functions of this file followed from the derivation
COMPARE_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
# Reads that only show the value.
HARMLESS = frozenset({"print", "str", "repr", "format", "len", "isinstance"})
LOGGING = ("info", "debug", "warning", "log", "write", "print")
# What the name holds on an XLA device before and after the fix.
BEFORE, AFTER = "cpu", "xla"


@dataclass
class _Reads:
    """What the reads of the derived name say: where it reaches an autocast, and why the
    new value could change anything else."""

    direct: list[ast.AST] = field(default_factory=list)  # autocast(device_type=name)
    gates: list[tuple[ast.AST, ast.AST]] = field(default_factory=list)  # (read, autocast chooser)
    problems: list[str] = field(default_factory=list)
    # ``device_type == "cuda"`` choosing the autocast, rewritten to let "xla" in as well.
    test_edits: list[Replace] = field(default_factory=list)


def derivation_findings(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        finding = _derivation(model, node, ctx)
        if finding is not None:
            yield finding


def _cuda_test(test: ast.expr) -> tuple[ast.Constant, ast.expr] | None:
    """``"cuda" in d`` / ``d.startswith("cuda")`` / ``d == "cuda"`` / ``d.type == "cuda"``:
    the "cuda" literal and the device expression it is compared with."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right, op = test.left, test.comparators[0], test.ops[0]
        if isinstance(op, ast.In) and const_str(left) == "cuda":
            return left, right  # type: ignore[return-value]
        if isinstance(op, ast.Eq):
            if const_str(right) == "cuda":
                return right, left  # type: ignore[return-value]
            if const_str(left) == "cuda":
                return left, right  # type: ignore[return-value]
        return None
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Attribute)
        and test.func.attr == "startswith"
        and len(test.args) == 1
        and not test.keywords
        and const_str(test.args[0]) == "cuda"
    ):
        return test.args[0], test.func.value  # type: ignore[return-value]
    return None


def _has_xla_case(node: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("xla")
        for n in ast.walk(node)
    )


def _derivation(model: ScriptModel, assign: ast.Assign, ctx: RuleContext) -> Finding | None:
    value = assign.value
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
        return None
    if not isinstance(value, ast.IfExp) or const_str(value.body) != "cuda":
        return None
    found = _cuda_test(value.test)
    fallback = const_str(value.orelse) if not isinstance(value.orelse, ast.IfExp) else "cpu"
    if found is None or fallback is None or fallback.startswith(("cuda", "xla")):
        return None
    if _has_xla_case(value.orelse):
        return _stale_test(model, assign)  # already converted: is the autocast chosen on XLA?
    literal, subject = found
    strings = device_strings(model, subject)
    if strings is not None and "cuda" not in strings:
        return None  # this script never runs it on CUDA
    name = assign.targets[0].id
    reads = _reads_of(model, assign, name)
    if reads is None:
        return None
    found_reads = _Reads()
    for read in reads:
        _classify(model, read, found_reads, MAX_DEPTH)
    if not found_reads.direct and not found_reads.gates:
        return None
    if ctx.target == "legacy" and found_reads.direct:
        line = found_reads.direct[0].lineno  # type: ignore[attr-defined]
        found_reads.problems.insert(
            0,
            f'torch 1.13\'s torch.autocast has no "xla" device type: use torch_xla.amp.autocast '
            f"at line {line} instead (XLA102 there)",
        )
    return _finding(model, assign, value, literal, fallback, found_reads)


def _finding(
    model: ScriptModel,
    assign: ast.Assign,
    value: ast.IfExp,
    literal: ast.Constant,
    fallback: str,
    reads: _Reads,
) -> Finding:
    name = assign.targets[0].id  # type: ignore[attr-defined]
    if reads.gates:
        read, chooser = reads.gates[0]
        other = _other_branch(chooser)
        shown = f"`{model.segment(other)}`" if other is not None else "no autocast"
        consequence = f"line {read.lineno} chooses {shown} instead of the autocast"  # type: ignore[attr-defined]
    else:
        read = reads.direct[0]
        consequence = (
            f'the autocast at line {read.lineno} gets device type "{fallback}", which casts '  # type: ignore[attr-defined]
            "nothing on XLA tensors"
        )
    message = (
        f'`{name}` looks for "cuda" in the device: on the XLA device it is "{fallback}", so '
        f"{consequence}, and the converted run silently loses mixed precision"
    )
    fix = _fix(model, value, literal)
    if fix is not None and reads.test_edits:
        fix = Fix(fix.title + ", and let it choose the autocast", (*fix.ops, *reads.test_edits))
    manual = None
    if fix is None:
        manual = f'make `{name}` "xla" on the XLA device'
    elif reads.problems:
        reason = "; ".join(dict.fromkeys(reads.problems))
        fix = Fix(fix.title, fix.ops, safe=False, review_reason=reason)
        manual = f"review: {reason}"
    return Finding(CODE, message, model.span(value), Severity.WARNING, fix=fix, manual=manual)


def _stale_test(model: ScriptModel, assign: ast.Assign) -> Finding | None:
    """The name already has its "xla" case, but a test still lets only "cuda" choose the
    autocast (``ctx = autocast(...) if device_type == "cuda" else nullcontext()``): the
    converted run silently stays in fp32."""
    name = assign.targets[0].id  # type: ignore[attr-defined]
    reads = _reads_of(model, assign, name)
    for read in reads or ():
        cmp = model.parent(read)
        if not isinstance(cmp, ast.Compare) or len(cmp.ops) != 1:
            continue
        found = _Reads()
        _compare(model, read, cmp, found)
        stale = [p for p in found.problems if "stay off on XLA" in p] or found.test_edits
        if not stale:
            continue
        message = (
            f'`{model.segment(cmp)}` is false for "{AFTER}": `{name}` is "{AFTER}" on the XLA '
            "device, so the autocast stays off there and the run silently loses mixed precision"
        )
        if not found.test_edits:
            manual = 'make the test treat "xla" like "cuda"'
            return Finding(CODE, message, model.span(cmp), Severity.WARNING, manual=manual)
        edit = found.test_edits[0]
        reason = (
            f"turns the autocast on on XLA ({edit.code}): the run there computes in the "
            "autocast's dtype where it ran in fp32"
        )
        fix = Fix(f"Let XLA choose the autocast: {edit.code}", (edit,), safe=False,
                  review_reason=reason)  # fmt: skip
        return Finding(
            CODE, message, model.span(cmp), Severity.WARNING, fix=fix, manual=f"review: {reason}"
        )
    return None


def _fix(model: ScriptModel, value: ast.IfExp, literal: ast.Constant) -> Fix | None:
    lit = model.segment(literal)
    test = model.segment(value.test)
    body = model.segment(value.body)
    if not lit or test.count(lit) != 1 or lit.count("cuda") != 1 or body.count("cuda") != 1:
        return None
    xla_test = test.replace(lit, lit.replace("cuda", "xla"))
    xla_body = body.replace("cuda", "xla")
    code = f"{xla_body} if {xla_test} else {model.segment(value.orelse)}"
    return Fix(
        f"Add the XLA case: {xla_body} if {xla_test}",
        (Replace(model.span(value.orelse), code),),
    )


def _other_branch(chooser: ast.AST) -> ast.AST | None:
    """The branch of ``nullcontext() if c else autocast(...)`` that is not the autocast."""
    if isinstance(chooser, ast.IfExp):
        for branch in (chooser.body, chooser.orelse):
            if not _has_autocast(branch):
                return branch
    return None


def _scope_of(model: ScriptModel, node: ast.AST) -> ast.AST:
    return model.enclosing_function(node) or model.tree


def _binds(fn: ast.AST, name: str) -> bool:
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        a = fn.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
        if any(p is not None and p.arg == name for p in params):
            return True
    body = fn.body if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) else []
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for stmt in body
        for n in ast.walk(stmt)
    )


def _reads_of(model: ScriptModel, assign: ast.Assign, name: str) -> list[ast.Name] | None:
    """The reads of ``name`` that see this assignment; None when the name is bound in its
    scope more than once (which value a read sees is then out of reach)."""
    scope = _scope_of(model, assign)
    stores = [
        n
        for n in model.name_nodes(name)
        if not isinstance(n.ctx, ast.Load) and _scope_of(model, n) is scope
    ]
    if len(stores) != 1:
        return None
    out = []
    for n in model.name_nodes(name):
        if not isinstance(n.ctx, ast.Load):
            continue
        fn = model.enclosing_function(n)
        hidden = False
        while fn is not None and fn is not scope:
            if _binds(fn, name):
                hidden = True
                break
            fn = model.enclosing_function(fn)
        if hidden or (fn is None and scope is not model.tree):
            continue
        out.append(n)
    return out


def _classify(model: ScriptModel, read: ast.expr, out: _Reads, depth: int) -> None:
    parent = model.parent(read)
    line = read.lineno
    holder = model.parent(parent) if isinstance(parent, ast.keyword) else parent
    if isinstance(holder, ast.Call) and model.call_name(holder) in AUTOCASTS:
        if arg_or_keyword(holder, 0, "device_type") is read:
            out.direct.append(read)
            return
    if isinstance(parent, ast.Compare) and len(parent.ops) == 1:
        _compare(model, read, parent, out)
        return
    if isinstance(parent, ast.FormattedValue):
        return
    call = model.parent(parent) if isinstance(parent, ast.keyword) else parent
    if isinstance(call, ast.Call):
        _passed(model, read, call, out, depth)
        return
    out.problems.append(
        f"line {line} hands `{model.segment(read)}` on where xla-lens cannot follow it: "
        f'it will read "{AFTER}" there, where it read "{BEFORE}"'
    )


def _compare(model: ScriptModel, read: ast.expr, cmp: ast.Compare, out: _Reads) -> None:
    other = cmp.comparators[0] if cmp.left is read else cmp.left
    op = cmp.ops[0]
    texts = _strings(other)
    line = read.lineno
    if texts is None or not isinstance(op, COMPARE_OPS):
        out.problems.append(
            f"line {line} compares `{model.segment(read)}` in a way xla-lens cannot read"
        )
        return

    def outcome(value: str) -> bool:
        hit = value in texts
        return hit if isinstance(op, ast.Eq | ast.In) else not hit

    chooser = _autocast_chooser(model, cmp)
    if chooser is not None:
        if outcome("cuda") == outcome(AFTER):
            out.gates.append((read, chooser))
        else:
            out.gates.append((read, chooser))
            edit = test_rewrite(model, read, cmp)
            if edit is None:
                where = "its `enabled=`" if isinstance(chooser, ast.Call) else "the autocast"
                out.problems.append(
                    f"line {line} (`{model.segment(cmp)}`) decides {where} differently for "
                    f'"{AFTER}" than for "cuda": the autocast would stay off on XLA; make the '
                    'test treat "xla" like "cuda"'
                )
                return
            out.test_edits.append(edit)
            if isinstance(chooser, ast.If):
                # The branch may hold more than the autocast (a GradScaler, pinned memory):
                # all of it now runs on XLA too.
                out.problems.append(
                    f"line {line} (`{model.segment(cmp)}`) is rewritten to `{edit.code}`: "
                    "the whole branch it guards now runs on XLA as on CUDA, not only the autocast"
                )
        return
    if outcome(BEFORE) != outcome(AFTER):
        out.problems.append(
            f"line {line} (`{model.segment(cmp)}`) takes the other branch once the value is "
            f'"{AFTER}" instead of "{BEFORE}"'
        )


def test_rewrite(model: ScriptModel, read: ast.expr, cmp: ast.Compare) -> Replace | None:
    """``t == "cuda"`` → ``t in ("cuda", "xla")``, ``t != "cuda"`` → ``t not in (...)``,
    ``t in ("cuda", "mps")`` → ``t in ("cuda", "mps", "xla")``: the outcome is unchanged for
    every value the name had before ("xla" is new) and, for "xla", is the one for "cuda"."""
    other = cmp.comparators[0] if cmp.left is read else cmp.left
    op = cmp.ops[0]
    name = model.segment(read)
    if isinstance(op, ast.Eq | ast.NotEq) and const_str(other) == "cuda":
        lit = model.segment(other)
        xla = lit.replace("cuda", "xla")
        keyword = "in" if isinstance(op, ast.Eq) else "not in"
        return Replace(model.span(cmp), f"{name} {keyword} ({lit}, {xla})")
    if (
        isinstance(op, ast.In | ast.NotIn)
        and cmp.left is read
        and isinstance(other, ast.Tuple | ast.List | ast.Set)
        and any(const_str(e) == "cuda" for e in other.elts)
    ):
        lit = next(model.segment(e) for e in other.elts if const_str(e) == "cuda")
        items = [*(model.segment(e) for e in other.elts), lit.replace("cuda", "xla")]
        opening, closing = {ast.Tuple: "()", ast.List: "[]", ast.Set: "{}"}[type(other)]
        keyword = "in" if isinstance(op, ast.In) else "not in"
        container = f"{opening}{', '.join(items)}{closing}"
        return Replace(model.span(cmp), f"{name} {keyword} {container}")
    return None


def _strings(node: ast.expr) -> set[str] | None:
    if (text := const_str(node)) is not None:
        return {text}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        values = {const_str(e) for e in node.elts}
        return None if None in values else values  # type: ignore[return-value]
    return None


def _has_autocast(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and _autocast_name(n) for n in ast.walk(node))


def _autocast_name(call: ast.Call) -> bool:
    func = call.func
    text = (
        func.attr
        if isinstance(func, ast.Attribute)
        else func.id
        if isinstance(func, ast.Name)
        else ""
    )
    return text == "autocast"


def _autocast_chooser(model: ScriptModel, cmp: ast.Compare) -> ast.AST | None:
    """The ``x if test else y`` / ``if test:`` / ``autocast(enabled=test)`` whose test holds
    this comparison and that chooses whether an autocast runs."""
    node: ast.AST = cmp
    for parent in model.ancestors(cmp):
        if isinstance(parent, ast.BoolOp | ast.UnaryOp):
            node = parent
            continue
        if isinstance(parent, ast.IfExp) and parent.test is node:
            return parent if _has_autocast(parent.body) or _has_autocast(parent.orelse) else None
        if isinstance(parent, ast.If) and parent.test is node:
            branches = [*parent.body, *parent.orelse]
            return parent if any(_has_autocast(s) for s in branches) else None
        if isinstance(parent, ast.keyword) and parent.arg == "enabled" and parent.value is node:
            call = model.parent(parent)
            return call if isinstance(call, ast.Call) and _autocast_name(call) else None
        return None
    return None


def _passed(model: ScriptModel, read: ast.expr, call: ast.Call, out: _Reads, depth: int) -> None:
    line = read.lineno
    if isinstance(call.func, ast.Name) and call.func.id in HARMLESS:
        return
    if isinstance(call.func, ast.Attribute) and call.func.attr in LOGGING:
        if isinstance(call.func.value, ast.Name) and "log" in call.func.value.id.lower():
            return
    shown = model.segment(call.func)
    target = callee(model, call) if depth > 0 else None
    param = None
    if target is not None:
        index = next((i for i, a in enumerate(call.args) if a is read), None)
        kw = next((k.arg for k in call.keywords if k.value is read), None)
        param = parameter_for(target[0], target[1], index, kw)
    if target is None or param is None:
        out.problems.append(
            f"line {line} passes `{model.segment(read)}` to `{shown}`, whose code xla-lens "
            f'cannot follow: it will get "{AFTER}" where it got "{BEFORE}"'
        )
        return
    fn = target[0]
    if _binds_in_body(fn, param):
        out.problems.append(f"`{shown}` (line {fn.lineno}) rebinds its `{param}` parameter")
        return
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load):
            _classify(model, n, out, depth - 1)


def _binds_in_body(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for stmt in fn.body
        for n in ast.walk(stmt)
    )
