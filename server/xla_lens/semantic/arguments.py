"""Where a configuration value really comes from: argparse defaults, config dicts, locals.

Real scripts rarely write ``init_process_group("nccl")`` or ``torch.autocast("cuda")``
literally: they write ``backend=args.dist_backend`` with ``--dist-backend`` defaulting to
``"nccl"``, ``backend=cfg["backend"]`` with a dict literal elsewhere, or
``device_type=device_type`` bound a few lines above. ``literal_sources`` follows such an
expression to the string literals it can evaluate to, so a rule can report (and fix) the
literal where it lives; when any step is out of reach it answers None and the rule reports
without a fix rather than guessing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .model import ScriptModel, const_str, dotted, keyword, method_name

MAX_DEPTH = 6


@dataclass(frozen=True)
class ArgOption:
    """One ``parser.add_argument(...)`` call and the parts of it a fix may touch."""

    call: ast.Call
    dest: str
    default: ast.expr | None
    choices: ast.expr | None


def _dest(call: ast.Call) -> str | None:
    kw = keyword(call, "dest")
    if kw is not None:
        return const_str(kw.value)
    flags = [const_str(a) for a in call.args]
    names = [f for f in flags if f is not None]
    if not names:
        return None
    long = [f for f in names if f.startswith("--")]
    chosen = long[0] if long else names[0]
    return chosen.lstrip("-").replace("-", "_") or None


def argparse_options(model: ScriptModel) -> dict[str, ArgOption]:
    """``dest`` → the option that defines it, for every ``add_argument`` call in the file.
    A dest defined twice (two parsers) is ambiguous and left out."""
    cached = getattr(model, "_xla_lens_argparse", None)
    if cached is not None:
        return cached
    out: dict[str, ArgOption] = {}
    ambiguous: set[str] = set()
    for call in model.method_calls("add_argument"):
        dest = _dest(call)
        if dest is None:
            continue
        if dest in out:
            ambiguous.add(dest)
        default = keyword(call, "default")
        choices = keyword(call, "choices")
        out[dest] = ArgOption(
            call, dest, default.value if default else None, choices.value if choices else None
        )
    for dest in ambiguous:
        out.pop(dest, None)
    for call in model.method_calls("set_defaults"):
        for kw in call.keywords:
            if kw.arg in out:
                opt = out[kw.arg]
                out[kw.arg] = ArgOption(opt.call, opt.dest, kw.value, opt.choices)
    model._xla_lens_argparse = out  # type: ignore[attr-defined]
    return out


def attribute_reads(model: ScriptModel, attr: str) -> list[ast.Attribute]:
    """Every ``<something>.attr`` read in the file (``args.dist_backend``)."""
    return [
        n
        for n in model.nodes_of(ast.Attribute)
        if isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Load)
    ]


def _scope(model: ScriptModel, node: ast.AST) -> ast.AST:
    fn = model.enclosing_function(node)
    return fn if fn is not None else model.tree


def local_bindings(model: ScriptModel, name: str, at: ast.AST) -> list[ast.Assign | ast.AnnAssign]:
    """Assignments to ``name`` in the scope that runs ``at`` (falling back to the module
    when the function never binds it)."""
    scope = _scope(model, at)
    by_scope = _bindings_by_scope(model, name)
    here = list(by_scope.get(scope, ()))
    if here or scope is model.tree:
        return here
    if _binds_elsewhere(scope, name):
        return []  # a parameter, loop target or with-target: not a value we can read
    return list(by_scope.get(model.tree, ()))


def _bindings_by_scope(
    model: ScriptModel, name: str
) -> dict[ast.AST, list[ast.Assign | ast.AnnAssign]]:
    """``name``'s assignments grouped by the scope they run in, each group in source order
    (once per name and parse: asked per use, a scan of every binding was quadratic)."""

    def group() -> dict[ast.AST, list[ast.Assign | ast.AnnAssign]]:
        out: dict[ast.AST, list[ast.Assign | ast.AnnAssign]] = {}
        for a in model.assignments.get(name, []):
            out.setdefault(_scope(model, a), []).append(a)
        return out

    return model.memo((_bindings_by_scope, name), group)


def _binds_elsewhere(fn: ast.AST, name: str) -> bool:
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        args = fn.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        if any(p is not None and p.arg == name for p in params):
            return True
    for n in ast.walk(fn):
        # Only called when no plain assignment binds it here: any other store
        # (tuple unpacking, loop or with target, global statement aside) hides the value.
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
            return True
    return False


def dict_value(node: ast.AST, key: str) -> ast.expr | None:
    """``{"key": value}`` / ``dict(key=value)`` → value."""
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values, strict=True):
            if k is not None and const_str(k) == key:
                return v
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        kw = keyword(node, key)
        return kw.value if kw else None
    return None


def _class_default(model: ScriptModel, cls_name: str, attr: str) -> ast.expr | None:
    for cls in model.nodes_of(ast.ClassDef):
        if not (isinstance(cls, ast.ClassDef) and cls.name == cls_name):
            continue
        for stmt in cls.body:
            target = value = None
            if isinstance(stmt, ast.AnnAssign):
                target, value = stmt.target, stmt.value
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
            if isinstance(target, ast.Name) and target.id == attr and value is not None:
                if isinstance(value, ast.Call) and (dotted(value.func) or "").endswith("field"):
                    kw = keyword(value, "default")
                    return kw.value if kw else None
                return value
    return None


def literal_sources(model: ScriptModel, expr: ast.AST, depth: int = 0) -> list[ast.expr] | None:
    """The literal expressions ``expr`` can evaluate to, or None when one is out of reach.

    Follows: constants, ``a if c else b``, local/global names with assignments in reach,
    ``args.x`` (argparse default), ``cfg["k"]`` / ``cfg.k`` for dict literals and
    ``SimpleNamespace``/dataclass defaults.
    """
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, ast.Constant):
        return [expr]
    if isinstance(expr, ast.IfExp):
        body = literal_sources(model, expr.body, depth + 1)
        orelse = literal_sources(model, expr.orelse, depth + 1)
        return None if body is None or orelse is None else body + orelse
    if isinstance(expr, ast.Name):
        binds = local_bindings(model, expr.id, expr)
        if not binds:
            return None
        out: list[ast.expr] = []
        for a in binds:
            if a.value is None:
                return None
            got = literal_sources(model, a.value, depth + 1)
            if got is None:
                return None
            out.extend(got)
        return out
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        option = argparse_options(model).get(expr.attr)
        if option is not None and is_parsed_args(model, expr.value):
            if option.default is None:
                return None
            return literal_sources(model, option.default, depth + 1)
        return _container_sources(model, expr.value, expr.attr, depth, attribute=True)
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
        key = const_str(expr.slice)
        if key is None:
            return None
        return _container_sources(model, expr.value, key, depth, attribute=False)
    return None


def is_parsed_args(model: ScriptModel, name: ast.Name) -> bool:
    """``args`` bound from ``parser.parse_args()`` (or a parameter conventionally so named)."""
    for a in local_bindings(model, name.id, name):
        if isinstance(a.value, ast.Call) and method_name(a.value) in {
            "parse_args",
            "parse_known_args",
        }:
            return True
    return name.id in {"args", "opt", "opts", "options", "flags", "FLAGS", "hparams"}


def _container_sources(
    model: ScriptModel, holder: ast.Name, key: str, depth: int, attribute: bool
) -> list[ast.expr] | None:
    binds = local_bindings(model, holder.id, holder)
    if len(binds) != 1 or binds[0].value is None:
        return None
    value = binds[0].value
    found = dict_value(value, key) if not attribute else None
    if found is None and attribute and isinstance(value, ast.Call):
        callee = dotted(value.func) or ""
        if callee.endswith("SimpleNamespace") or callee.endswith("Namespace"):
            kw = keyword(value, key)
            found = kw.value if kw else None
        elif isinstance(value.func, ast.Name):
            kw = keyword(value, key)
            found = kw.value if kw else _class_default(model, value.func.id, key)
    if found is None:
        return None
    return literal_sources(model, found, depth + 1)


def string_values(nodes: list[ast.expr] | None) -> set[str] | None:
    if nodes is None:
        return None
    out = set()
    for n in nodes:
        s = const_str(n)
        if s is None:
            return None
        out.add(s)
    return out
