"""Boolean command-line switches and the branch of an ``if`` they select.

HF example scripts choose their padding with a switch: ``if args.pad_to_max_length:
collator = default_data_collator else: collator = DataCollatorWithPadding(tok)``. Whether the
dynamic branch is what a plain run does depends on the switch's default, declared either by
``parser.add_argument("--pad_to_max_length", action="store_true")`` or by a dataclass field
``pad_to_max_length: bool = field(default=True)`` that ``HfArgumentParser`` turns into options.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .arguments import argparse_options
from .model import SCOPE_TYPES, ScriptModel, const_str, dotted, keyword


@dataclass(frozen=True)
class BoolSwitch:
    """``if <holder>.<name>:`` (or ``not``) deciding whether ``node`` runs."""

    name: str  # the attribute / variable tested (``pad_to_max_length``)
    flag: str  # how the command line spells it (``--pad_to_max_length``), else the test's text
    declared: bool  # an argparse option or a dataclass field of the script defines it
    runs_when: bool  # the switch value under which the node runs
    default: bool | None  # the switch's declared default; None when out of reach


def switch_deciding(
    model: ScriptModel, node: ast.AST, wanted: tuple[str, ...]
) -> BoolSwitch | None:
    """The nearest ``if``/conditional expression in ``node``'s frame that tests a switch
    whose name contains one of ``wanted`` and holds ``node`` in one of its branches."""
    child = node
    for a in model.ancestors(node):
        if isinstance(a, SCOPE_TYPES):
            return None
        if isinstance(a, ast.If | ast.IfExp):
            in_body = child in a.body if isinstance(a, ast.If) else child is a.body
            in_else = child in a.orelse if isinstance(a, ast.If) else child is a.orelse
            name, negated, tested = _tested_name(a.test)
            if (in_body or in_else) and name and any(w in name.lower() for w in wanted):
                declared = _declaration(model, name)
                if declared is None:
                    flag = model.segment(tested)  # a config value or local: its own text
                    return BoolSwitch(name, flag, False, in_body != negated, None)
                flag, default = declared
                return BoolSwitch(name, flag, True, in_body != negated, default)
        child = a
    return None


def _tested_name(test: ast.expr) -> tuple[str | None, bool, ast.expr]:
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    if isinstance(inner, ast.Attribute):
        return inner.attr, negated, inner
    if isinstance(inner, ast.Name):
        return inner.id, negated, inner
    return None, negated, inner


def _declaration(model: ScriptModel, name: str) -> tuple[str, bool | None] | None:
    """(the flag's spelling, its default) from argparse or a dataclass field; None when
    the script declares no such option."""
    option = argparse_options(model).get(name)
    if option is not None:
        spellings = [const_str(a) for a in option.call.args]
        long = [s for s in spellings if s and s.startswith("--")]
        return (long[0] if long else f"--{name}"), _argparse_default(option.call)
    defaults = set(_field_defaults(model, name))
    if not defaults:
        return None
    return f"--{name}", defaults.pop() if len(defaults) == 1 else None


def _argparse_default(call: ast.Call) -> bool | None:
    default = keyword(call, "default")
    if default is not None:
        value = default.value
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            return value.value
        return None
    action = keyword(call, "action")
    kind = const_str(action.value) if action is not None else None
    return {"store_true": False, "store_false": True}.get(kind or "")


def _field_defaults(model: ScriptModel, name: str) -> list[bool | None]:
    """Defaults of ``name: bool = ...`` fields in the script's classes."""
    out: list[bool | None] = []
    for cls in model.nodes_of(ast.ClassDef):
        assert isinstance(cls, ast.ClassDef)
        for stmt in cls.body:
            if not (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == name
            ):
                continue
            value = stmt.value
            if isinstance(value, ast.Call) and (dotted(value.func) or "").endswith("field"):
                kw = keyword(value, "default")
                value = kw.value if kw is not None else None
            is_bool = isinstance(value, ast.Constant) and isinstance(value.value, bool)
            out.append(value.value if is_bool else None)  # type: ignore[union-attr]
    return out


def is_bool_option(model: ScriptModel, name: str) -> bool:
    """``--multi_gpu`` declared ``action="store_true"`` (or ``store_false``, or a bool
    default): a switch, not the CUDA index its name may suggest (NER-BERT, held-out 122)."""
    option = argparse_options(model).get(name)
    if option is None:
        return False
    if _argparse_default(option.call) is not None:
        return True
    kind = keyword(option.call, "type")
    return kind is not None and dotted(kind.value) == "bool"
