"""Small questions about one ``ast`` node or one line, asked by every rule: the name a call
is made through, a keyword argument, a dotted name, whether a string names a CUDA device."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

LOOP_TYPES = (ast.For, ast.While, ast.AsyncFor)
# Nodes that open a frame of their own: a walk of one scope does not enter them.
SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":`` (either side of the ``==``)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def main_guard(tree: ast.Module) -> ast.If | None:
    """The module's first top-level ``if __name__ == "__main__":`` block."""
    return next((s for s in tree.body if is_main_guard(s)), None)  # type: ignore[return-value]


def split_lines(source: str) -> list[str]:
    """Lines (with their ends) as ``ast`` numbers them: only LF, CRLF and CR end a line.
    str.splitlines also breaks at form feed, vertical tab, U+001C..U+001E, NEL, U+2028 and
    U+2029, which may sit in comments and strings, and would shift every later line."""
    lines: list[str] = []
    start = 0
    for m in _LINE_BREAK.finditer(source):
        lines.append(source[start : m.end()])
        start = m.end()
    if start < len(source):
        lines.append(source[start:])
    return lines


def is_cuda_string(node: ast.AST) -> bool:
    """``"cuda"``, ``"cuda:0"`` or an f-string starting with ``cuda``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        v = node.value
        return v == "cuda" or (v.startswith("cuda:") and v[5:].isdigit())
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        return (
            isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and first.value.startswith("cuda")
        )
    return False


def const_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def arg_or_keyword(call: ast.Call, index: int, name: str) -> ast.expr | None:
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    if len(call.args) > index and not any(isinstance(a, ast.Starred) for a in call.args):
        return call.args[index]
    return None


def method_name(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def receiver(call: ast.Call) -> ast.expr | None:
    return call.func.value if isinstance(call.func, ast.Attribute) else None


def optimizer_like(name: str) -> bool:
    """``optimizer``, ``opt``, ``d_optimizer``, ``optimizer_G``, ``self.g_optim``, and the
    British ``optimiser`` (Kaixhin/Rainbow's ``self.optimiser``, held-out 25)..."""
    low = name.lower()
    return (
        low in {"optim", "opt"}
        or "optimizer" in low
        or "optimiser" in low
        or low.endswith(("_optim", "_opt"))
    )


def is_group_setting(node: ast.AST) -> bool:
    """``opt.param_groups[0]["lr"]``: a hyper-parameter of an optimizer's parameter group, a
    Python number however device-bound the optimizer's parameters are (``"params"`` excepted)."""
    if not isinstance(node, ast.Subscript):
        return False
    key = const_str(node.slice)
    group = node.value
    return (
        key is not None
        and key != "params"
        and isinstance(group, ast.Subscript)
        and isinstance(group.value, ast.Attribute)
        and group.value.attr == "param_groups"
    )


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def iter_names(node: ast.AST) -> Iterable[str]:
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            yield n.id


def iteration_clauses(node: ast.AST) -> list[ast.For | ast.comprehension]:
    """What binds a loop variable at ``node``: a comprehension's ``for`` clauses, or the
    ``for`` statement itself (each has ``target`` and ``iter``); empty for anything else."""
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        return list(node.generators)
    return [node] if isinstance(node, ast.For) else []


def node_order(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
