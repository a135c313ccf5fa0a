"""Command-line flags and config fields that decide a CUDA device picker:

    parser.add_argument("-no_cuda", action="store_true")      # argparse, negated
    opt.cuda = not opt.no_cuda
    device = torch.device("cuda" if opt.cuda else "cpu")

    @dataclass
    class Args:
        cuda: bool = True                                      # dataclass / tyro field
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

XLA101 keeps such user flags when it converts the picker, so after conversion the flag
switches the XLA device, under a CUDA name. Pure analysis: where the flag is declared, what
it defaults to and whether the XLA device is on by default.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from . import pickers
from .device_sites import chooses_device
from .model import ScriptModel, const_str, keyword, method_name, receiver
from .node_helpers import is_cuda_string
from .values import option_dest

FLAG_WORDS = pickers.FLAG_WORDS
MAX_HOPS = 3


@dataclass(frozen=True)
class DeviceFlag:
    """Where a device flag is declared (``declared``: the ``add_argument`` call or the class
    field), its attribute name, the picker line it decides, and whether the picker chooses
    the device (after conversion: the XLA device) when the user passes nothing."""

    declared: ast.AST
    attr: str
    picker_line: int
    negated: bool  # the picker chooses the device when the flag is False (``no_cuda``)
    default: bool | None  # the flag's own default; None when unknown
    is_field: bool
    spelled: str  # "-no_cuda" (the option as typed) or "cuda: bool = True" (the field)

    @property
    def device_by_default(self) -> bool | None:
        return None if self.default is None else self.default != self.negated


def device_flags(model: ScriptModel) -> list[DeviceFlag]:
    return model.memo(device_flags, lambda: _device_flags(model))


def _device_flags(model: ScriptModel) -> list[DeviceFlag]:
    found: dict[int, DeviceFlag] = {}
    if not any(any(w in name.lower() for w in FLAG_WORDS) for name in _declared_names(model)):
        return []  # the common case: no option or field named for CUDA, nothing to follow
    for test, line, chooses_when_false in _picker_tests(model):
        for attr, negated in _flag_attributes(model, test, chooses_when_false, 0):
            for declared, default, is_field in _declarations(model, attr):
                if isinstance(declared, ast.Call):
                    spelled = next((const_str(a) for a in declared.args if const_str(a)), attr)
                else:
                    spelled = model.segment(declared).strip()
                found.setdefault(
                    id(declared),
                    DeviceFlag(declared, attr, line, negated, default, is_field, spelled or attr),
                )
    return sorted(found.values(), key=lambda f: (f.declared.lineno, f.declared.col_offset))


def _picker_tests(model: ScriptModel) -> Iterator[tuple[ast.expr, int, bool]]:
    """The tests of device pickers that keep the user's flag when converted, and whether
    the device is chosen when the test is False (``"cpu" if opt.no_cuda else "cuda"``)."""
    for node in model.nodes_of(ast.IfExp):
        pk = pickers.picker(model, node)
        if pk is not None and pk.test_kind in {"flag", "mixed", "mixed-name"}:
            assert isinstance(node, ast.IfExp)
            yield node.test, node.lineno, pk.chooses_when_false
    for node in model.nodes_of(ast.If):
        assert isinstance(node, ast.If)
        if chooses_device(model, node) or _moves_to_cuda(model, node):
            yield node.test, node.lineno, False


def _moves_to_cuda(model: ScriptModel, node: ast.If) -> bool:
    """``if args.cuda: model = model.cuda()``: the flag decides the placement itself
    (held-out 78, KnowledgeGraphEmbedding's ``--cuda``, ``store_true``)."""
    for stmt in node.body:
        value = stmt.value if isinstance(stmt, ast.Expr | ast.Assign) else None
        if isinstance(value, ast.Call) and (
            method_name(value) == "cuda"
            or (
                method_name(value) == "to"
                and len(value.args) == 1
                and is_cuda_string(value.args[0])
            )
        ):
            recv = receiver(value)
            if recv is not None and model.qualname(recv) != "torch":
                return True
    return False


def _declared_names(model: ScriptModel) -> Iterator[str]:
    for call in model.method_calls("add_argument"):
        yield option_dest(call) or ""
    for stmt in model.nodes_of(ast.AnnAssign):
        assert isinstance(stmt, ast.AnnAssign)
        if isinstance(stmt.target, ast.Name):
            yield stmt.target.id


def _flag_attributes(
    model: ScriptModel, expr: ast.AST, negated: bool, hops: int
) -> Iterator[tuple[str, bool]]:
    """``opt.cuda`` / ``not args.no_cuda`` in a test, following flag names and
    ``opt.cuda = not opt.no_cuda`` a few assignments deep; yields (attribute, negated)."""
    if hops > MAX_HOPS:
        return
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        yield from _flag_attributes(model, expr.operand, not negated, hops)
    elif isinstance(expr, ast.BoolOp):
        for v in expr.values:
            yield from _flag_attributes(model, v, negated, hops)
    elif isinstance(expr, ast.Name):
        values = model.assigned_from(expr.id)
        if len(values) == 1:
            yield from _flag_attributes(model, values[0], negated, hops + 1)
    elif (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and model.qualname(expr) is None
        and any(w in expr.attr.lower() for w in FLAG_WORDS)
    ):
        yield expr.attr, negated
        for value in _attribute_values(model, expr.attr):
            yield from _flag_attributes(model, value, negated, hops + 1)


def _attribute_values(model: ScriptModel, attr: str) -> list[ast.expr]:
    """Values stored in ``<name>.<attr> = value`` anywhere in the script."""
    return [node.value for node in pickers.attribute_stores(model).get(attr, [])]


def _declarations(model: ScriptModel, attr: str) -> Iterator[tuple[ast.AST, bool | None, bool]]:
    """``add_argument`` options stored in ``attr`` and bool class fields named ``attr``."""
    for call in model.method_calls("add_argument"):
        if option_dest(call) == attr:
            yield call, _option_default(call), False
    for cls in model.nodes_of(ast.ClassDef):
        assert isinstance(cls, ast.ClassDef)
        for stmt in cls.body:
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == attr
                and ast.unparse(stmt.annotation) == "bool"
            ):
                value = stmt.value
                default = value.value if isinstance(value, ast.Constant) else None
                yield stmt, default if isinstance(default, bool) else None, True


def _option_default(call: ast.Call) -> bool | None:
    action = keyword(call, "action")
    kind = const_str(action.value) if action is not None else None
    default = keyword(call, "default")
    if default is not None:
        value = default.value
        return (
            value.value
            if isinstance(value, ast.Constant) and isinstance(value.value, bool)
            else None
        )
    if kind == "store_true":
        return False
    if kind == "store_false":
        return True
    return None
