"""A function handed both a module and an optimizer, which moves the module itself
(``BaseTrainer.__init__(self, model, optimizer)`` running ``self.model = model.to(device)``;
held-out 47's spoter2). Its caller built that optimizer, most often from
``model.parameters()`` before the call: on CUDA the move keeps the Parameter objects, on XLA it
makes new ones, so the optimizer would keep updating the CPU copies and the model would never
train. Pointing the move at the XLA device is then not provably the same program."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from .constructor_optimizers import constructor_optimizer
from .holding_constructors import held_modules
from .line_refs import line_ref

if TYPE_CHECKING:
    from .model import ScriptModel

# Parameter names of optimizers (``optimizer``, ``optim``, ``g_optimizer``, ``optim_d``); not a
# bare ``opt``, which as often holds the options (SupContrast's ``set_model(model, opt)``).
_OPTIMIZER_NAME = re.compile(r"^(optim|optimizer|optimiser)(_\w+)?$|_(optim|optimizer|optimiser)$")
# Names of modules a trainer is handed (``model``, ``net``, ``generator``, ``policy``...).
_MODULE_NAME = re.compile(
    r"model|net|module|encoder|decoder|generator|discriminator|policy|actor|critic|backbone|"
    r"classifier",
    re.IGNORECASE,
)


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs]


def _annotation(arg: ast.arg) -> str:
    return ast.unparse(arg.annotation) if arg.annotation is not None else ""


def _rebound(fn: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(fn)
    )


def handed_optimizer(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name of an optimizer parameter of ``fn`` it does not rebind (it uses what the
    caller built)."""
    for arg in _parameters(fn):
        if _OPTIMIZER_NAME.search(arg.arg) or "Optimizer" in _annotation(arg):
            if not _rebound(fn, arg.arg):
                return arg.arg
    return None


def is_handed_module(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """``name`` is a parameter of ``fn`` that holds a module: named like one or annotated
    ``nn.Module``."""
    for arg in _parameters(fn):
        if arg.arg == name and name != "self":
            return bool(_MODULE_NAME.search(name)) or "Module" in _annotation(arg)
    return False


def strands_handed_optimizer(model: ScriptModel, fn: ast.AST | None, move: ast.Call) -> str | None:
    """The optimizer parameter a move (``model.to(d)``, ``model.cuda()``) of a module handed
    to ``fn`` would strand on XLA, or None. Callers in this file are XLA109's flow analysis:
    stranded only where it finds a build before the call; with no caller here, whoever calls
    is out of sight and the optimizer is assumed built from the CPU model."""
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    if not isinstance(move.func, ast.Attribute) or not isinstance(move.func.value, ast.Name):
        return None
    if not is_handed_module(fn, move.func.value.id):
        return None
    optimizer = handed_optimizer(fn)
    if optimizer is None:
        return None
    callers = callers_here(model, fn)
    if not callers:
        return optimizer
    from .accelerate_prepare import stale_optimizers  # noqa: PLC0415 (imports the model)

    stale = model.memo(("handed_optimizers", "stale"), lambda: stale_optimizers(model))
    ids = {id(c) for c in callers}
    for _build, moved in stale:
        if any(id(n) in ids for n in ast.walk(moved.node)):
            return optimizer
    return None


def callable_name(model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """How callers name ``fn``: its class for an ``__init__``."""
    owner = model.parent(fn)
    if isinstance(owner, ast.ClassDef) and fn.name == "__init__":
        return owner.name
    return fn.name


def callers_here(model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    name = callable_name(model, fn)
    out = []
    for call in model.calls:
        func = call.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called == name:
            out.append(call)
    return out


def earlier_optimizer(model: ScriptModel, move: ast.Call) -> ast.Call | None:
    """An optimizer built before ``move`` from the moved name or names derived from it, that
    XLA109's event analysis does not already pair with this move (semseg's parameter groups
    from submodule lists, held-out 49)."""
    func = move.func
    if not isinstance(func, ast.Attribute) or _paired_builds(model, move):
        return None
    if not isinstance(func.value, ast.Name):
        return None
    from .optimizer_sources import optimizer_before_move  # noqa: PLC0415

    name = func.value.id
    return model.memo(
        (optimizer_before_move, move), lambda: optimizer_before_move(model, move, name)
    )


def _paired_builds(model: ScriptModel, move: ast.Call) -> list:
    """XLA109's (build, move) pairs whose move is ``move``."""
    from .accelerate_prepare import stale_optimizers  # noqa: PLC0415 (imports the model)

    stale = model.memo(("handed_optimizers", "stale"), lambda: stale_optimizers(model))
    return [(b, m) for b, m in stale if any(n is move for n in ast.walk(m.node))]


def stranded_optimizer(model: ScriptModel, move: ast.Call) -> ast.AST | None:
    """The optimizer pointing ``move`` at the XLA device alone would leave on the old
    Parameters: one XLA109 pairs with it and cannot reorder safely (where it can, both fixes
    together keep the program), or one built earlier from names derived from the module."""
    from .optimizer_reorder import reorder_plan  # noqa: PLC0415

    for build, moved in _paired_builds(model, move):
        if not reorder_plan(model, build, moved).safe:
            return build.node
    return earlier_optimizer(model, move)


def stranded_here(model: ScriptModel, move: ast.Call) -> ast.AST | None:
    """The optimizer this file builds before ``move`` that no fix can reorder: the move's fix
    alone makes a script that runs and never trains (IGEV's ``fetch_optimizer(args, model)``
    then ``model.cuda()``, held-out 164). None where the optimizer is handed in or built in a
    constructor (there the stranding is only possible)."""
    if strands_handed_optimizer(model, model.enclosing_function(move), move) is not None:
        return None
    if constructor_optimizer(model, move) is not None:
        return None
    return stranded_optimizer(model, move)


def stranding_reason(model: ScriptModel, move: ast.Call) -> str:
    """Why pointing ``move`` at the XLA device may leave an optimizer on stale CPU tensors
    ("" when nothing says so)."""
    moved = model.segment(move.func.value) if isinstance(move.func, ast.Attribute) else "?"
    if isinstance(move.func, ast.Attribute) and isinstance(move.func.value, ast.Call):
        held = held_modules(model, move.func.value)
        if held:  # ``Wrapper(net_model, ...).to(device)`` moves the ``net_model`` it keeps
            moved = model.segment(held[0])
    optimizer = strands_handed_optimizer(model, model.enclosing_function(move), move)
    if optimizer is not None:
        return (
            f"`{moved}` is handed in beside the optimizer `{optimizer}`: if the caller built "
            f"that optimizer from `{moved}`'s parameters, on XLA this move makes new Parameter "
            "objects, the optimizer keeps updating the CPU copies and the model never trains"
        )
    ctor = constructor_optimizer(model, move)
    if ctor is not None:
        where = f"{ctor.path.name} " if ctor.path is not None else ""
        return (
            f"{ctor.builder(f'{where}line {line_ref(ctor.line)}')} builds its optimizer from "
            f"`{ctor.text}` before this move{ctor.alternatives}: on XLA the move makes new Parameter "
            "objects, so that optimizer would keep updating the CPU copies and the model would "
            "never train; build the optimizer after the move (or move inside __init__ first)"
        )
    earlier = stranded_optimizer(model, move)
    if earlier is not None:
        return (
            f"the optimizer built on line {line_ref(earlier.lineno)} takes parameters that come "
            f"from `{moved}` before this move: on XLA the move makes new Parameter objects, so "
            "it would keep updating the CPU copies and the model would never train; move "
            f"`{moved}` to the device before building the optimizer"
        )
    return ""
