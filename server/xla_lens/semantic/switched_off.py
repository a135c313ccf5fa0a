"""Blocks a script switched off itself: ``args.distributed = False`` at the top of a function,
then ``if args.distributed: model = DDP(model)`` further down it. Such a block never runs,
so nothing in it needs converting (held-out 106's TPU port of NVIDIA's SSD hard-disables its
CUDA distributed path this way, and its `dist.get_rank()` and apex DDP were reported).

Decided from the source alone, and only when nothing can turn the flag back on before the
test:

- the switch is a plain statement of the function's (or module's) own body, not under an
  ``if``/loop/``try``, binding an attribute (``args.distributed``) to a falsy literal
  (``False``, ``None``, ``0``, ``""``): an option switched off whatever the command line
  says. A plain name (``save_model = False``) is a knob the user edits on that very line,
  so what it guards stays live;
- the test (``if flag:``, ``x if flag else y``, or one ``and`` part of either) comes later in
  the same function;
- nothing else in this file stores to an attribute so called (``setattr`` with that name
  included);
- every call between the switch and the test that is handed the object holding the
  attribute (``log_params(logger, args)``) runs a function of this file or of a workspace
  module that stores no attribute so called. A call that cannot be followed keeps the
  block live: a missed finding costs less than a quiet one.
"""

from __future__ import annotations

import ast

from .model import ScriptModel
from .node_helpers import dotted
from .span import Span
from .workspace_calls import helper_target, parsed_module

FALSY = (False, None, 0, "")
# Builtins that read what they are handed (``vars`` hands out the attributes to change).
READ_ONLY_BUILTINS = frozenset(
    {"print", "str", "repr", "len", "format", "isinstance", "hasattr", "getattr", "type", "id"}
)


def switched_off(model: ScriptModel) -> tuple[tuple[Span, int], ...]:
    """(span of the block that never runs, 1-based line of the switch), once per parse."""
    return model.memo(("switched_off",), lambda: tuple(_compute(model)))


def switched_off_at(model: ScriptModel, span: Span) -> int | None:
    """The line of the switch that turns off the code at ``span``, or None."""
    return next((line for block, line in switched_off(model) if block.contains(span)), None)


def _compute(model: ScriptModel) -> list[tuple[Span, int]]:
    out = _switched_options(model)
    gates = _version_gates(model)
    out += gates + _gated_flags(model, gates)
    return out


def _version_gates(model: ScriptModel) -> list[tuple[Span, int]]:
    """``if version.parse(torch.__version__) < version.parse("1.6"): from apex import amp``
    (VL-T5's caption.py, held-out 114): torch_xla 2.9 needs torch 2.9, so a branch for torch
    1.x never runs (and the ``else`` of a ``>=`` test of it is that branch)."""
    out: list[tuple[Span, int]] = []
    for node in model.nodes_of(ast.If):
        assert isinstance(node, ast.If)
        test = node.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            continue
        if not _names_torch_version(test.left):
            continue
        major = _major(test.comparators[0])
        if major is None or major >= 2:
            continue
        op = test.ops[0]
        if isinstance(op, ast.Lt | ast.LtE):
            dead = node.body
        elif isinstance(op, ast.Gt | ast.GtE) and node.orelse:
            dead = node.orelse
        else:
            continue
        out.append((Span(model.span(dead[0]).start, model.span(dead[-1]).end), node.lineno))
    return out


def _names_torch_version(node: ast.AST) -> bool:
    return any(dotted(n) == "torch.__version__" for n in ast.walk(node))


def _major(node: ast.AST) -> int | None:
    """The major version of ``"1.6"`` / ``version.parse("1.6")`` / ``LooseVersion("1.6")``."""
    texts = [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]
    if len(texts) != 1:
        return None
    head = texts[0].split(".")[0]
    return int(head) if head.isdigit() else None


def _gated_flags(model: ScriptModel, gates: list[tuple[Span, int]]) -> list[tuple[Span, int]]:
    """``_use_apex = False`` at module level, set True only inside such a branch: every
    ``if _use_apex:`` (or ``elif ... and _use_apex``) body never runs either."""
    if not gates:
        return []
    flags: dict[str, int] = {}
    for stmt in model.tree.body:
        flag = _falsy_name(stmt)
        if flag is not None:
            flags.setdefault(flag, stmt.lineno)
    out: list[tuple[Span, int]] = []
    for flag, line in flags.items():
        stores = [n for n in model.name_nodes(flag) if isinstance(n.ctx, ast.Store | ast.Del)]
        live = [
            n
            for n in stores
            if n.lineno != line and not any(g.contains(model.span(n)) for g, _ in gates)
        ]
        if live:
            continue
        for node in model.nodes_of(ast.If):
            assert isinstance(node, ast.If)
            if any(isinstance(p, ast.Name) and p.id == flag for p in _conjuncts(node.test)):
                out.append((_body_span(model, node), line))  # type: ignore[arg-type]
    return out


def _falsy_name(stmt: ast.stmt) -> str | None:
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and value.value is False:
        return target.id
    return None


def _switched_options(model: ScriptModel) -> list[tuple[Span, int]]:
    out: list[tuple[Span, int]] = []
    for scope in [model.tree, *model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef)]:
        body: list[ast.stmt] = scope.body  # type: ignore[attr-defined]
        for stmt in body:
            flag = _falsy_switch(stmt)
            if flag is None or not _only_store(model, flag, stmt):
                continue
            for node in model.walk_scope(scope):
                if not isinstance(node, ast.If | ast.IfExp) or _before(node, stmt):
                    continue
                if not any(dotted(p) == flag for p in _conjuncts(node.test)):
                    continue
                if not _untouched_between(model, scope, stmt, node, flag):
                    continue
                span = _body_span(model, node)
                if span is not None:
                    out.append((span, stmt.lineno))
    return out


def _falsy_switch(stmt: ast.stmt) -> str | None:
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    value = stmt.value
    if not isinstance(value, ast.Constant) or value.value not in FALSY:
        return None
    if isinstance(value.value, float | complex):
        return None
    target = stmt.targets[0]
    if not isinstance(target, ast.Attribute):
        # ``save_model = False`` / ``use_compile = False  # TODO fix`` is a knob the user
        # sets by editing that very line (Conditional_Diffusion_MNIST, build-nanogpt): the
        # code it guards is live to them. An override of an option (``args.distributed =
        # False`` after parsing) switches the option off whatever the command line says.
        return None
    return dotted(target)


def _only_store(model: ScriptModel, flag: str, switch: ast.stmt) -> bool:
    """No other store to an attribute of the flag's name anywhere in this file."""
    target = switch.targets[0]  # type: ignore[attr-defined]
    return not _stores_attribute(model.tree, flag.rpartition(".")[2], skip=target)


def _stores_attribute(tree: ast.AST, name: str, skip: ast.AST | None = None) -> bool:
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Attribute)
            and n.attr == name
            and isinstance(n.ctx, ast.Store | ast.Del)
            and n is not skip
        ):
            return True
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ("setattr", "delattr")
            and len(n.args) >= 2
            and not (
                isinstance(n.args[1], ast.Constant)
                and isinstance(n.args[1].value, str)
                and n.args[1].value != name
            )
        ):
            return True  # setattr(args, name, ...) or a name computed at run time
    return False


def _before(node: ast.AST, stmt: ast.stmt) -> bool:
    return (node.lineno, node.col_offset) <= (stmt.lineno, stmt.col_offset)  # type: ignore[attr-defined]


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [p for v in test.values for p in _conjuncts(v)]
    return [test]


def _untouched_between(
    model: ScriptModel, scope: ast.AST, switch: ast.stmt, test: ast.AST, flag: str
) -> bool:
    """Every call between the switch and the test that is handed the flag's holder runs
    code known to store no attribute of the flag's name."""
    holder, _, name = flag.rpartition(".")
    start = (switch.end_lineno, switch.end_col_offset)
    end = (test.lineno, test.col_offset)  # type: ignore[attr-defined]
    for node in model.walk_scope(scope):
        if not isinstance(node, ast.Call):
            continue
        at = (node.lineno, node.col_offset)
        if not start <= at < end:
            continue
        handed = [*node.args, *(k.value for k in node.keywords)]
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        if not any(dotted(a) == holder for a in [*handed, receiver] if a is not None) and not any(
            isinstance(a, ast.Starred) for a in node.args
        ):
            continue
        if not _stores_nothing(model, node, name):
            return False
    return True


def _stores_nothing(model: ScriptModel, call: ast.Call, name: str) -> bool:
    if isinstance(call.func, ast.Name) and call.func.id in model.functions:
        return True  # this file's own function: the file-wide check covered it
    if isinstance(call.func, ast.Name) and model.qualname(call.func) is None:
        if call.func.id in READ_ONLY_BUILTINS:
            return True
        if call.func.id == "setattr" and len(call.args) >= 2:
            # ``setattr(args, "world_size", n)``: another attribute.
            named = call.args[1]
            return isinstance(named, ast.Constant) and named.value != name
    target = helper_target(model, call)
    if target is None:
        return False
    parsed = parsed_module(target.path)
    return parsed is not None and not _stores_attribute(parsed.tree, name)


def _body_span(model: ScriptModel, node: ast.If | ast.IfExp) -> Span | None:
    if isinstance(node, ast.IfExp):
        return model.span(node.body)
    first, last = node.body[0], node.body[-1]
    return Span(model.span(first).start, model.span(last).end)


__all__ = ["switched_off", "switched_off_at"]
