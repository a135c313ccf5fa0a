"""XLA410: a module whose ``__init__`` caches its own parameters in a plain container
(``self._alphas.append((n, p))`` over ``self.named_parameters()``), moved to the XLA device
afterwards: the move replaces every Parameter, the container keeps the CPU ones, and whatever
reads it (an optimizer built from ``model.alphas()``) works on stale tensors. See
``parts/cached_parameters.py`` for the mechanism and the measurement.

Reported at the move, with no fix: the container must be collected again after the move (or
read from ``named_parameters()`` each time), which is the class's code, often in another file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ..semantic.device_intent import being_converted, uses_xla_device
from ..semantic.frameworks import ownership
from ..semantic.model import ScriptModel, method_name
from ..semantic.optimizer_events import moves_to_a_device
from ..semantic.workspace_classes import ClassRef, built, chain, class_reference, script_module
from .base import Category, Finding, Rule, RuleContext, Severity
from .parts.cached_parameters import Cache, class_caches

CODE = "XLA410"
SELF_RETURNING = frozenset({"to", "cuda", "train", "eval", "float", "bfloat16", "half"})


def _constructor(value: ast.expr) -> ast.Call | None:
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in SELF_RETURNING
    ):
        value = value.func.value
    return value if isinstance(value, ast.Call) else None


def _classes(model: ScriptModel, call: ast.Call) -> tuple[ClassRef, ...]:
    func = call.func
    if model.path and not model.path.startswith("<"):
        ref = (
            class_reference(script_module(model), func)
            if isinstance(func, ast.Name | ast.Attribute)
            else None
        )
        if ref is not None:
            return chain(ref)
        found = built(model, call)
        return chain(found[0]) if len(found) == 1 else ()
    if isinstance(func, ast.Name):
        for stmt in model.tree.body:
            if isinstance(stmt, ast.ClassDef) and stmt.name == func.id:
                return (ClassRef(Path(model.path or "<script>"), stmt, None),)  # type: ignore[arg-type]
    return ()


def _applies(model: ScriptModel) -> bool:
    if model.uses_trainer or ownership(model).framework is not None:
        return False  # the HF Trainer, accelerate and Lightning move the model themselves
    return (being_converted(model) or uses_xla_device(model)) and bool(model.training_loops)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if not _applies(model):
        return
    script = Path(model.path or "<script>")
    reported: set[int] = set()
    for node in model.nodes_of(ast.Assign):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        call = _constructor(node.value)
        if call is None:
            continue
        caches = class_caches(_classes(model, call), script)
        if not caches:
            continue
        name = node.targets[0].id
        scope = model.enclosing_function(node) or model.tree
        moves = (
            [node.value] if node.value is not call and moves_to_a_device(model, node.value) else []
        )  # type: ignore[arg-type]
        moves += [
            n
            for n in model.walk_scope(scope)
            if isinstance(n, ast.Call)
            and n.lineno > node.lineno
            and method_name(n) in {"to", "cuda"}
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == name
            and moves_to_a_device(model, n)
        ]
        for move in moves[:1]:
            if id(move) not in reported:
                reported.add(id(move))
                yield _finding(model, move, name, caches)  # type: ignore[arg-type]


def _finding(model: ScriptModel, move: ast.Call, name: str, caches: tuple[Cache, ...]) -> Finding:
    c = caches[0]
    more = f" (and {len(caches) - 1} more)" if len(caches) > 1 else ""
    return Finding(
        CODE,
        f"moving `{name}` to the XLA device leaves `self.{c.attr}` of {c.owner} ({c.where}) "
        f"holding its old parameters{more}: `__init__` collects them into a plain container, "
        "and on XLA `.to()` replaces every Parameter (on CUDA it keeps them), so what reads "
        f"that container afterwards (`{c.reader}()`, an optimizer built from it) works on "
        "stale CPU tensors: the model does not train them, or backward fails ('One of the "
        "differentiated Tensors appears to not have been used in the graph')",
        model.span(move),
        Severity.ERROR,
        manual=f"Collect `self.{c.attr}` again after the move (or have `{c.reader}()` read "
        "`named_parameters()` each time), before any optimizer takes those parameters.",
    )


HOVER = """\
**XLA410 · parameters cached before the move**

On XLA `module.to(device)` replaces every Parameter object (on CUDA it keeps them). A list
or dict the module filled with its own parameters in `__init__` keeps the old CPU ones: an
optimizer built from it trains nothing. Collect them again after the move, or read
`named_parameters()` each time; `nn.ParameterList` / `nn.ParameterDict` move with the module.
"""

RULE = Rule(
    code=CODE,
    name="cached-parameters-move",
    category=Category.CONVERSION,
    summary="A module caching its parameters in a plain list in __init__, moved to XLA: the list keeps the old CPU Parameters",
    severity=Severity.ERROR,
    check=check,
    has_fix=False,
    hover={},
)
