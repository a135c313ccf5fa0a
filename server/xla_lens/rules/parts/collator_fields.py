"""XLA303: the padding a collator class of the script passes as ``self.padding`` (held-out 15,
SimCSE: ``@dataclass class Collator: padding: Union[bool, str] = True`` whose ``__call__``
runs ``self.tokenizer.pad(features, padding=self.padding)``, built as ``Collator(tokenizer)``:
every batch is padded to its own longest row).

The attribute's values are those the class's constructions pass for it (by keyword, or by
position in the dataclass's field order or ``__init__``'s parameters) and, when one of them
leaves it out, its default (the class-body field, ``field(default=...)``, or the ``__init__``
parameter stored in it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...semantic.model import ScriptModel, keyword
from ..base import Finding, Severity


@dataclass(frozen=True)
class FieldValue:
    value: ast.expr
    cls: ast.ClassDef
    # The construction that leaves the field at this default (None: a passed value).
    default_for: ast.Call | None


def _class_of(model: ScriptModel, node: ast.AST) -> ast.ClassDef | None:
    return next((a for a in model.ancestors(node) if isinstance(a, ast.ClassDef)), None)


def _fields(cls: ast.ClassDef) -> list[tuple[str, ast.expr | None]]:
    """Dataclass-style fields in order, with their defaults."""
    out: list[tuple[str, ast.expr | None]] = []
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            default = stmt.value
            if isinstance(default, ast.Call) and (kw := keyword(default, "default")) is not None:
                default = kw.value  # field(default=True)
            out.append((stmt.target.id, default))
    return out


def _init_parameter(cls: ast.ClassDef, attr: str) -> tuple[int, str, ast.expr | None] | None:
    """(position after self, name, default) of the ``__init__`` parameter stored in
    ``self.<attr>``."""
    init = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
    )
    if init is None:
        return None
    stored = {
        n.value.id
        for n in ast.walk(init)
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Name)
        and any(
            isinstance(t, ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            and t.attr == attr
            for t in n.targets
        )
    }
    params = init.args.args[1:]
    defaults = [None] * (len(params) - len(init.args.defaults)) + list(init.args.defaults)
    for i, (param, default) in enumerate(zip(params, defaults, strict=True)):
        if param.arg in stored:
            return i, param.arg, default
    return None


def field_values(model: ScriptModel, attr: ast.AST) -> list[FieldValue] | None:
    """What ``self.<attr>`` may hold, in a method of a class of this script; None when it is
    not such an attribute or a construction is out of sight (``**kwargs``, ``*args``)."""
    if not (
        isinstance(attr, ast.Attribute)
        and isinstance(attr.value, ast.Name)
        and attr.value.id == "self"
    ):
        return None
    cls = _class_of(model, attr)
    if cls is None:
        return None
    fields = _fields(cls)
    names = [name for name, _ in fields]
    if attr.attr in names:
        position, default = names.index(attr.attr), dict(fields)[attr.attr]
    elif (param := _init_parameter(cls, attr.attr)) is not None:
        position, _, default = param
    else:
        return None
    out: list[FieldValue] = []
    for call in model.calls:
        if not (isinstance(call.func, ast.Name) and call.func.id == cls.name):
            continue
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return None
        passed = keyword(call, attr.attr)
        if passed is not None:
            out.append(FieldValue(passed.value, cls, None))
        elif position < len(call.args):
            out.append(FieldValue(call.args[position], cls, None))
        elif default is not None:
            out.append(FieldValue(default, cls, call))
    return out


FIELD_MANUAL = (
    'Build it with a fixed length — {cls}(..., padding="max_length", max_length=N), N the '
    "longest sequence you keep (the tokenizer's truncation length) — or use the script's "
    "fixed-length path (a collator that does not pad, with the tokenizer padding to "
    "max_length); review what the other constructions pass."
)


def field_padding_finding(
    model: ScriptModel, call: ast.Call, padding: ast.expr, found: FieldValue, code: str
) -> Finding:
    """The finding for ``pad(..., padding=self.padding)`` that may pad to the longest row."""
    cls = found.cls.name
    value = model.segment(found.value)
    if found.default_for is not None:
        source = (
            f"`{cls}`'s default {value} (line {found.value.lineno}), which "  # type: ignore[attr-defined]
            f"`{model.segment(found.default_for)[:60]}` keeps (line {found.default_for.lineno})"
        )
    else:
        source = f"{value}, passed to `{cls}` at line {found.value.lineno}"  # type: ignore[attr-defined]
    return Finding(
        code,
        f"pads to the longest sequence of each batch (a new shape per batch, so XLA compiles "
        f"again): `{model.segment(padding)}` is {source}",
        model.span(padding),
        Severity.WARNING,
        manual=FIELD_MANUAL.format(cls=cls),
    )
