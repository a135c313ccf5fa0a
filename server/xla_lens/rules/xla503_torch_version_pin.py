"""XLA503: a check of ``torch.__version__`` that stops the script under torch 2.9.

torch_xla 2.9 runs only with torch 2.9. Scripts written in the torch 1.x years sometimes pin
it: ``assert torch.__version__.split('.')[0] == '1'`` (pytorch-retinanet, held-out 130), or
``if int(torch.__version__[0]) > 1: raise ...``. Under the converted environment the pin
fails before training starts, whatever else the conversion got right.

Detection evaluates the check itself, with ``torch.__version__`` set to the versions a
torch_xla 2.9 environment has (``2.9.0``, ``2.9.0+cpu``, ``2.9.0+cu128``), and reports it only
when it stops the script under every one of them: an ``assert`` whose test is false, or an
``if`` whose branch raises or exits and whose test is true. Only plain string, int, float and
tuple operations are evaluated (``split``, ``startswith``, slices, comparisons,
``version.parse``/``LooseVersion``/``Version`` as numeric tuples); anything else is left alone,
as is a check that selects code paths without stopping.

No fix: whether the code after the pin works on torch 2.x is for the author to check.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ..semantic.model import ScriptModel
from .base import Category, Finding, Rule, RuleContext, Severity

CODE = "XLA503"
VERSIONS = ("2.9.0", "2.9.0+cpu", "2.9.0+cu128")
VERSION_NAMES = frozenset({"torch.__version__", "torch.version.__version__"})
VERSION_PARSERS = frozenset(
    {
        "packaging.version.parse",
        "packaging.version.Version",
        "distutils.version.LooseVersion",
        "distutils.version.StrictVersion",
        "pkg_resources.parse_version",
        "setuptools._distutils.version.LooseVersion",
    }
)
STRING_METHODS = frozenset({"split", "startswith", "endswith", "strip", "lstrip", "rstrip"})
BUILTINS = frozenset({"int", "float", "str"})
EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})
MANUAL = (
    "Check that the code runs on torch 2.x (most 1.x code does), then drop the check or widen "
    "it to the torch version torch_xla needs."
)


class _Unknown(Exception):
    """The expression uses something the evaluator does not model."""


def _numeric(text: str) -> tuple[int, ...]:
    """``"2.9.0+cpu"`` → ``(2, 9, 0)``: what version parsers compare (local part dropped)."""
    parts = []
    for piece in re.split(r"[.+]", text.split("+")[0]):
        match = re.match(r"\d+", piece)
        if match is None:
            break
        parts.append(int(match.group()))
    return tuple(parts)


class _Evaluator:
    def __init__(self, model: ScriptModel, version: str) -> None:
        self.model = model
        self.version = version
        self.used_version = False

    def value(self, node: ast.AST) -> object:
        model = self.model
        if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | bool):
            return node.value
        if isinstance(node, ast.Name | ast.Attribute) and model.qualname(node) in VERSION_NAMES:
            self.used_version = True
            return self.version
        if isinstance(node, ast.Tuple):
            return tuple(self.value(e) for e in node.elts)
        if isinstance(node, ast.Subscript):
            base = self.value(node.value)
            if isinstance(node.slice, ast.Slice):
                parts = [
                    None if p is None else self.value(p)
                    for p in (node.slice.lower, node.slice.upper, node.slice.step)
                ]
                if not all(p is None or isinstance(p, int) for p in parts):
                    raise _Unknown
                return self._index(base, slice(*parts))
            index = self.value(node.slice)
            return self._index(base, index)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.BoolOp):
            values = [self.value(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.value(node.operand)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _Unknown

    def _index(self, base: object, index: object) -> object:
        if not isinstance(base, str | tuple | list) or not isinstance(index, int | slice):
            raise _Unknown
        try:
            return base[index]
        except IndexError as err:
            raise _Unknown from err

    def _compare(self, node: ast.Compare) -> bool:
        left = self.value(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.value(right_node)
            try:
                ok = _OPS[type(op)](left, right)
            except (KeyError, TypeError) as err:
                raise _Unknown from err
            if not ok:
                return False
            left = right
        return True

    def _call(self, node: ast.Call) -> object:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise _Unknown
        name = self.model.call_name(node)
        if name is None and isinstance(node.func, ast.Name) and node.func.id in BUILTINS:
            name = node.func.id  # builtins have no qualified name (unless shadowed: see below)
            if _shadowed(self.model, name):
                raise _Unknown
        args = [self.value(a) for a in node.args]
        if name in VERSION_PARSERS and len(args) == 1 and isinstance(args[0], str):
            return _numeric(args[0])
        if name in ("int", "float", "str") and len(args) == 1:
            try:
                return {"int": int, "float": float, "str": str}[name](args[0])
            except ValueError as err:
                raise _Unknown from err
        if isinstance(node.func, ast.Attribute) and node.func.attr in STRING_METHODS:
            receiver = self.value(node.func.value)
            if isinstance(receiver, str) and all(isinstance(a, str | int) for a in args):
                return getattr(receiver, node.func.attr)(*args)
        raise _Unknown


def _shadowed(model: ScriptModel, name: str) -> bool:
    """The script binds the builtin's name itself (a def, a class, an import, an assignment)."""
    if name in model.imports or model.assigned_from(name):
        return True
    return any(
        getattr(n, "name", None) == name
        for n in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    )


_OPS = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _result(model: ScriptModel, test: ast.expr) -> set[bool] | None:
    """The test's truth under each torch 2.9 version; None when it does not read
    ``torch.__version__`` or reads it in a way the evaluator does not model."""
    results: set[bool] = set()
    for version in VERSIONS:
        evaluator = _Evaluator(model, version)
        try:
            results.add(bool(evaluator.value(test)))
        except _Unknown:
            return None
        if not evaluator.used_version:
            return None
    return results


def _stops(body: list[ast.stmt], model: ScriptModel) -> bool:
    """The branch ends the script: it raises or exits (its last statement)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Raise):
        return True
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)):
        return False
    call = last.value
    name = model.call_name(call)
    if name is None and isinstance(call.func, ast.Name):
        name = call.func.id  # ``exit()``, ``quit()``: builtins
    return name in EXITS


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.target != "modern":
        return  # torch_xla 1.13 runs with torch 1.13
    for node in model.nodes_of(ast.Assert, ast.If):
        if isinstance(node, ast.Assert):
            if _result(model, node.test) == {False}:
                yield _finding(model, node, node.test, "this assert fails")
        elif isinstance(node, ast.If) and _stops(node.body, model):
            if _result(model, node.test) == {True}:
                yield _finding(model, node, node.test, "this check stops the script")


def _finding(model: ScriptModel, node: ast.stmt, test: ast.expr, what: str) -> Finding:
    return Finding(
        CODE,
        f"{what} under torch 2.9, which torch_xla 2.9 needs (torch.__version__ is "
        f'"2.9.0…"): it pins an older torch, so the converted script stops here before it trains',
        model.span(test),
        Severity.ERROR,
        manual=MANUAL,
    )


HOVER = """\
**XLA503 · torch version pin**

torch_xla 2.9 needs torch 2.9. A check such as `assert torch.__version__.split('.')[0] == '1'`
stops the converted script before it trains: check the code on torch 2.x, then drop or widen
the pin.
"""

RULE = Rule(
    code=CODE,
    name="torch-version-pin",
    category=Category.MODERNISATION,
    summary="a torch.__version__ check that fails under torch 2.9 (which torch_xla 2.9 needs) → drop or widen it",
    severity=Severity.ERROR,
    check=check,
    has_fix=False,
    hover={"torch.__version__": HOVER},
)
