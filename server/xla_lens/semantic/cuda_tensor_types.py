"""The "availability flag + CUDA tensor type" idiom of older GAN/CV scripts:

    cuda = True if torch.cuda.is_available() else False
    if cuda:
        generator.cuda()
    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    z = Tensor(np.random.normal(0, 1, (n, 100)))   # data
    ones = Tensor(n, 1).fill_(1.0)                  # shape
    real = imgs.type(Tensor)                        # cast and move

Pure analysis plus the edits that move what such an alias builds onto the XLA device; the
rule decides what to report and whether the fix is offered (every use of the alias and of the
flag is checked: one use of another kind and there is no fix).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from . import pickers, xla_api
from .device_sites import device_ref_at
from .edits import EditOp, Replace
from .line_refs import line_ref
from .model import Emitter, ScriptModel, is_cuda_string, method_name, receiver
from .xla_api import Target

# The legacy tensor types and the dtype each one holds.
TENSOR_DTYPES = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "ByteTensor": "uint8",
    "CharTensor": "int8",
    "ShortTensor": "int16",
    "IntTensor": "int32",
    "LongTensor": "int64",
    "BoolTensor": "bool",
}


@dataclass(frozen=True)
class TensorTypeAlias:
    """``name = torch.cuda.<T>`` or ``name = torch.cuda.<T> if flag else torch.<T>``."""

    assign: ast.Assign
    name: str
    type_name: str
    cuda_type: ast.Attribute
    flag: ast.expr | None
    constructors: tuple[ast.Call, ...]  # name(...)
    casts: tuple[ast.Call, ...]  # x.type(name)
    blocker: str  # why no fix is offered; "" when every use was understood

    @property
    def dtype(self) -> str:
        return TENSOR_DTYPES[self.type_name]

    @property
    def use_lines(self) -> list[int]:
        return sorted({c.lineno for c in (*self.constructors, *self.casts)})


def cuda_type_name(model: ScriptModel, node: ast.AST) -> str | None:
    """``FloatTensor`` for ``torch.cuda.FloatTensor``, else None."""
    q = model.qualname(node) or ""
    head, _, tail = q.rpartition(".")
    return tail if head == "torch.cuda" and tail in TENSOR_DTYPES else None


def _cpu_type_name(model: ScriptModel, node: ast.AST) -> str | None:
    q = model.qualname(node) or ""
    head, _, tail = q.rpartition(".")
    return tail if head == "torch" and tail in TENSOR_DTYPES else None


def tensor_type_aliases(model: ScriptModel) -> list[TensorTypeAlias]:
    return model.memo(tensor_type_aliases, lambda: list(_aliases(model)))


def _aliases(model: ScriptModel):
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        value, flag = node.value, None
        type_name = cuda_type_name(model, value)
        cuda_node = value
        if type_name is None and isinstance(value, ast.IfExp):
            for cuda_side, cpu_side in ((value.body, value.orelse), (value.orelse, value.body)):
                t = cuda_type_name(model, cuda_side)
                if t is not None and _cpu_type_name(model, cpu_side) == t:
                    type_name, cuda_node, flag = t, cuda_side, value.test
        if type_name is None or not isinstance(cuda_node, ast.Attribute):
            continue
        name = node.targets[0].id
        constructors, casts, blocker = _classify_uses(model, node, name)
        yield TensorTypeAlias(
            node, name, type_name, cuda_node, flag, tuple(constructors), tuple(casts), blocker
        )


def _rebinds(model: ScriptModel, name: str, assign: ast.AST) -> str:
    """Why ``name`` may mean something else somewhere ("" when bound only by ``assign``)."""
    if len(model.assignments.get(name, [])) != 1 or name in model.imports:
        return f"{name} is bound more than once"
    if any(isinstance(a, ast.arg) and a.arg == name for a in model.nodes_of(ast.arg)):
        return f"{name} is also a parameter name"
    return ""


def _classify_uses(
    model: ScriptModel, assign: ast.Assign, name: str
) -> tuple[list[ast.Call], list[ast.Call], str]:
    blocker = _rebinds(model, name, assign)
    constructors: list[ast.Call] = []
    casts: list[ast.Call] = []
    for n in model.name_nodes(name):
        if n is assign.targets[0]:
            continue
        p = model.parent(n)
        if not isinstance(n.ctx, ast.Load):
            blocker = blocker or f"{name} is rebound on line {line_ref(n.lineno)}"
        elif isinstance(p, ast.Call) and p.func is n and not p.keywords:
            constructors.append(p)
        elif _is_cast(model, n):
            assert isinstance(p, ast.Call)
            casts.append(p)
        else:
            stmt = model.enclosing_statement(n) or n
            shown = model.line_text(stmt.lineno - 1).strip()[:60]
            blocker = (
                blocker or f"{name} is also used as a value on line {line_ref(n.lineno)} ({shown})"
            )
    if not blocker and not (constructors or casts):
        blocker = f"{name} is never used"
    uses = [*constructors, *casts]
    if not blocker and any(
        inner is not outer and _inside(inner, outer) for inner in uses for outer in uses
    ):
        blocker = f"one use of {name} is nested inside another"
    return constructors, casts, blocker


def _is_cast(model: ScriptModel, n: ast.Name) -> bool:
    p = model.parent(n)
    return (
        isinstance(p, ast.Call)
        and method_name(p) == "type"
        and receiver(p) is not None
        and p.args == [n]
        and not p.keywords
    )


def _inside(inner: ast.AST, outer: ast.AST) -> bool:
    return any(n is inner for n in ast.walk(outer))


def alias_edits(
    model: ScriptModel, alias: TensorTypeAlias, e: Emitter, target: Target
) -> tuple[EditOp, ...]:
    """The alias names the CPU type; each constructor's result and each cast goes to the
    XLA device. ``torch.FloatTensor(...)`` keeps both legacy meanings (sizes or data) and
    the dtype; ``.to(device, dtype)`` is what ``.type(torch.cuda.FloatTensor)`` did."""
    torch = e.torch
    ops: list[EditOp] = [Replace(model.span(alias.assign.value), f"{torch}.{alias.type_name}")]
    for call in alias.constructors:
        dev = device_ref_at(model, call) or xla_api.device(e, target)
        ops.append(Replace(model.span(call), f"{model.segment(call)}.to({dev})"))
    for call in alias.casts:
        dev = device_ref_at(model, call) or xla_api.device(e, target)
        func = model.segment(call.func)
        # The receiver as written, parentheses included: ``(a + b).type(T)``.
        recv = func[: func.rindex(".")].rstrip()
        ops.append(Replace(model.span(call), f"{recv}.to({dev}, {torch}.{alias.dtype})"))
    return tuple(ops)


# --- the availability flag ------------------------------------------------------------
@dataclass(frozen=True)
class FlagPlan:
    """What the flag decides: ``placements`` (the ``if flag:`` blocks whose every statement
    is a ``.cuda()`` / ``.to("cuda")`` move XLA101 rewrites) and ``aliases`` (tensor-type
    aliases chosen by it that get their own fix). ``blocker`` says why there is no fix."""

    placements: tuple[ast.If, ...]
    aliases: tuple[TensorTypeAlias, ...]
    blocker: str
    # Device pickers testing the flag (``"cuda" if cuda else "cpu"``): XLA101 rewrites
    # them whole, so the flag no longer decides them.
    pickers: tuple[ast.AST, ...] = ()

    @property
    def guarded_lines(self) -> list[int]:
        lines = [s.lineno for p in self.placements for s in p.body]
        lines += [p.lineno for p in self.pickers]
        return sorted({*lines, *(a.assign.lineno for a in self.aliases)})


def flag_plan(model: ScriptModel, assign: ast.Assign, name: str) -> FlagPlan:
    placements: list[ast.If] = []
    aliases: list[TensorTypeAlias] = []
    rewritten: list[ast.AST] = []
    by_test = {id(a.flag): a for a in tensor_type_aliases(model) if a.flag is not None}
    blocker = _rebinds(model, name, assign)
    for n in model.name_nodes(name):
        if n is assign.targets[0] or blocker:
            continue
        p = model.parent(n)
        alias = by_test.get(id(n))
        if not isinstance(n.ctx, ast.Load):
            blocker = f"{name} is rebound on line {line_ref(n.lineno)}"
        elif isinstance(p, ast.If) and p.test is n and _only_placements(model, p):
            placements.append(p)
        elif isinstance(p, ast.If | ast.IfExp) and p.test is n and _availability_picker(model, p):
            rewritten.append(p)
        elif alias is not None and not alias.blocker:
            aliases.append(alias)
        elif alias is not None:
            blocker = f"line {line_ref(n.lineno)} chooses a CUDA tensor type with no fix ({alias.blocker})"
        else:
            shown = model.line_text(n.lineno - 1).strip()[:60]
            blocker = (
                f"{name} also decides line {line_ref(n.lineno)} ({shown}), which has no XLA rewrite"
            )
    if not blocker and not (placements or aliases):
        blocker = f"{name} guards nothing XLA101 rewrites"
    return FlagPlan(tuple(placements), tuple(aliases), blocker, tuple(rewritten))


def _availability_picker(model: ScriptModel, node: ast.If | ast.IfExp) -> bool:
    """A device picker on the flag alone, which XLA101 replaces by the XLA device."""
    if isinstance(node, ast.IfExp):
        pk = pickers.picker(model, node)
        return pk is not None and pk.test_kind == "availability"
    return pickers.if_picker(model, node) is not None


def _only_placements(model: ScriptModel, node: ast.If) -> bool:
    """``if cuda:`` with no ``else`` whose statements only move things to CUDA."""
    if node.orelse:
        return False
    for stmt in node.body:
        value = stmt.value if isinstance(stmt, ast.Expr | ast.Assign) else None
        if not (isinstance(value, ast.Call) and _is_cuda_move(model, value)):
            return False
    return True


def _is_cuda_move(model: ScriptModel, call: ast.Call) -> bool:
    recv = receiver(call)
    if recv is None or model.qualname(recv) == "torch":
        return False
    if method_name(call) == "cuda":
        return True
    return method_name(call) == "to" and len(call.args) == 1 and is_cuda_string(call.args[0])
