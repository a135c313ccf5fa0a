"""What the reads of a device-type name derived by looking for "cuda" do with it, for XLA102's
derivation finding (``autocast_device_type.py``).

Each read of the name is one of: the autocast's device type; a test that chooses the autocast
(``nullcontext() if t == "cpu" else autocast(t)``, ``if t == "cuda":``, ``enabled=t == "cuda"``);
a test whose outcome must not change when the value becomes "xla" where it was "cpu"; a print;
an argument of a function of this file, whose parameter is read the same ways (followed a few
calls deep). Anything else, and any test that would change its outcome, is a problem named in
the fix's review reason.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ...semantic.calls import callee, parameter_for
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, arg_or_keyword, const_str
from ...semantic.precision import AUTOCASTS
from ..base import Replace

COMPARE_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
# Reads that only show the value.
HARMLESS = frozenset({"print", "str", "repr", "format", "len", "isinstance"})
LOGGING = ("info", "debug", "warning", "log", "write", "print")
# What the name holds on an XLA device before and after the fix.
BEFORE, AFTER = "cpu", "xla"


@dataclass
class Reads:
    """What the reads of the derived name say: where it reaches an autocast, and why the
    new value could change anything else."""

    direct: list[ast.AST] = field(default_factory=list)  # autocast(device_type=name)
    gates: list[tuple[ast.AST, ast.AST]] = field(default_factory=list)  # (read, autocast chooser)
    problems: list[str] = field(default_factory=list)
    # ``device_type == "cuda"`` choosing the autocast, rewritten to let "xla" in as well.
    test_edits: list[Replace] = field(default_factory=list)


def other_branch(chooser: ast.AST) -> ast.AST | None:
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


def reads_of(model: ScriptModel, assign: ast.Assign, name: str) -> list[ast.Name] | None:
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


def classify_read(model: ScriptModel, read: ast.expr, out: Reads, depth: int) -> None:
    """Adds to ``out`` what ``read`` does with the name (``depth``: calls still followed)."""
    parent = model.parent(read)
    line = line_ref(read.lineno)
    holder = model.parent(parent) if isinstance(parent, ast.keyword) else parent
    if isinstance(holder, ast.Call) and model.call_name(holder) in AUTOCASTS:
        if arg_or_keyword(holder, 0, "device_type") is read:
            out.direct.append(read)
            return
    if isinstance(parent, ast.Compare) and len(parent.ops) == 1:
        compare_read(model, read, parent, out)
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


def compare_read(model: ScriptModel, read: ast.expr, cmp: ast.Compare, out: Reads) -> None:
    """``read`` compared in ``cmp``: a chooser of the autocast, or a test that must not flip."""
    other = cmp.comparators[0] if cmp.left is read else cmp.left
    op = cmp.ops[0]
    texts = _strings(other)
    line = line_ref(read.lineno)
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


def _passed(model: ScriptModel, read: ast.expr, call: ast.Call, out: Reads, depth: int) -> None:
    line = line_ref(read.lineno)
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
        out.problems.append(
            f"`{shown}` (line {line_ref(fn.lineno)}) rebinds its `{param}` parameter"
        )
        return
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load):
            classify_read(model, n, out, depth - 1)


def _binds_in_body(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for stmt in fn.body
        for n in ast.walk(stmt)
    )
