"""Optimizer steps hidden in a wrapper class: ``opt.step_and_update_lr()``.

LR-schedule wrappers (``ScheduledOptim``, ``NoamOpt``-style classes) hold the torch optimizer in
an attribute and step it from a method of their own: the training loop calls
``optimizer.step_and_update_lr()``, whose body runs ``self._optimizer.step()``. That method
call is the training step; without seeing it, the batch loop looks like a loop that only runs
``backward()`` and the epoch loop around it is taken for the step loop.

Two parts answer it:

- *optimizer attributes*: ``self._o`` of a class whose ``__init__`` stores a parameter there
  that every construction of the class in the script passes an optimizer for
  (``Wrap(torch.optim.SGD(...))``); attributes named like an optimizer already count;
- *instances*: which class a name holds: its assignments, or, for a parameter, what the
  script's callers pass, followed a few names deep; every value must construct the same class.

A class of the script: ``StepIndex.callee`` resolves ``opt.m()`` to its method, so the
method's body counts as the step's. A class of another module of the project
(``from transformer.Optim import ScheduledOptim``): its body is not this file's, so the call
itself is the step call and ``workspace_step_method`` names the inner step for the report.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .bound_values import bound_values
from .node_helpers import dotted, optimizer_like

if TYPE_CHECKING:
    from .model import ScriptModel

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
SELF_NAMES = frozenset({"self", "cls"})
# Names followed from a parameter to the values callers pass (train -> train_epoch).
MAX_DEPTH = 3
NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")


@dataclass(frozen=True)
class WorkspaceStep:
    """``receiver.method()`` runs ``step`` (``self._optimizer.step()``) in ``path``."""

    call: ast.Call
    path: Path
    class_name: str
    method: str
    step: ast.Call
    attribute: str
    # Already ``xm.optimizer_step(self.X)``: still the step, nothing left to convert.
    converted: bool = False
    # Every ``return`` of the method gives Python numbers (``value_loss_epoch += loss.item()``
    # ... ``return value_loss_epoch / n``): what the caller logs is no device tensor.
    returns_host: bool = False


def returns_host(fn: FunctionNode) -> bool:
    """Whether every ``return`` of ``fn`` gives Python numbers: constants, ``.item()``,
    ``float``/``int``/``len``, arithmetic of those and of ``self`` settings, and names the
    method binds only to such values (a2c-ppo's ``PPO.update`` returning loss averages).
    Read from the method's text alone, so a name it cannot judge makes the answer False."""
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if not returns or any(r.value is None for r in returns):
        return False
    bound: dict[str, list[ast.expr]] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    bound.setdefault(t.id, []).append(n.value)
                elif not isinstance(t, ast.Attribute | ast.Subscript):
                    for e in ast.walk(t):
                        if isinstance(e, ast.Name):
                            bound.setdefault(e.id, []).append(_UNJUDGED)
        elif isinstance(n, ast.AugAssign | ast.AnnAssign) and isinstance(n.target, ast.Name):
            bound.setdefault(n.target.id, []).append(n.value or _UNJUDGED)
        elif isinstance(n, ast.For | ast.comprehension | ast.With | ast.NamedExpr):
            targets = (
                [n.target]
                if not isinstance(n, ast.With)
                else [i.optional_vars for i in n.items if i.optional_vars is not None]
            )
            for t in targets:
                for e in ast.walk(t):
                    if isinstance(e, ast.Name):
                        bound.setdefault(e.id, []).append(_UNJUDGED)

    def host(e: ast.AST, depth: int) -> bool:
        if depth > 4:
            return False
        if isinstance(e, ast.Constant):
            return isinstance(e.value, int | float)
        if isinstance(e, ast.Tuple | ast.List):
            return all(host(x, depth + 1) for x in e.elts)
        if isinstance(e, ast.BinOp):
            return host(e.left, depth + 1) and host(e.right, depth + 1)
        if isinstance(e, ast.UnaryOp):
            return host(e.operand, depth + 1)
        if isinstance(e, ast.Attribute):
            return isinstance(e.value, ast.Name) and e.value.id in SELF_NAMES and _setting(e)
        if isinstance(e, ast.Call):
            if isinstance(e.func, ast.Attribute) and e.func.attr == "item" and not e.args:
                return True
            return isinstance(e.func, ast.Name) and e.func.id in {"float", "int", "len"}
        if isinstance(e, ast.Name):
            values = bound.get(e.id)
            return bool(values) and all(host(v, depth + 1) for v in values)
        return False

    return all(host(r.value, 0) for r in returns)  # type: ignore[arg-type]


# ``self.ppo_epoch * self.num_mini_batch``: a setting, by the names such code gives them.
_SETTING_WORDS = ("num", "epoch", "size", "count", "steps", "batch", "n_")
_UNJUDGED = ast.Constant(value=None)  # a binding the judge cannot see through


def _setting(attr: ast.Attribute) -> bool:
    name = attr.attr.lower()
    return any(w in name for w in _SETTING_WORDS)


def _methods(cls: ast.ClassDef) -> dict[str, FunctionNode]:
    return {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}


def _is_optimizer_value(model: ScriptModel, value: ast.AST) -> bool:
    if isinstance(value, ast.Call):
        name = model.call_name(value) or ""
        return name.startswith("torch.optim.") and not name.startswith(NOT_OPTIMIZERS)
    return isinstance(value, ast.Name) and model.is_optimizer(value)


def _stored_parameters(cls: ast.ClassDef) -> dict[str, tuple[int, str]]:
    """``attribute -> (positional index after self, parameter)`` for ``self.X = param`` in
    ``__init__``."""
    init = _methods(cls).get("__init__")
    if init is None:
        return {}
    params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]
    out: dict[str, tuple[int, str]] = {}
    for stmt in ast.walk(init):
        if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name)):
            continue
        if stmt.value.id not in params:
            continue
        for t in stmt.targets:
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id in SELF_NAMES
            ):
                out[t.attr] = (params.index(stmt.value.id), stmt.value.id)
    return out


def optimizer_attributes(
    model: ScriptModel, cls: ast.ClassDef, constructions: list[ast.Call]
) -> frozenset[str]:
    """Attributes of ``cls`` that hold the optimizer every construction passes in."""
    if not constructions:
        return frozenset()
    out = set(_built_optimizers(cls))
    for attr, (index, param) in _stored_parameters(cls).items():
        values = []
        for call in constructions:
            kw = next((k.value for k in call.keywords if k.arg == param), None)
            if kw is None and index < len(call.args):
                kw = call.args[index]
            values.append(kw)
        if all(v is not None and _is_optimizer_value(model, v) for v in values):
            out.add(attr)
    return frozenset(out)


# ``optim.Adam(...)`` / ``torch.optim.SGD(...)`` as written in the class's own module, whose
# imports the script's model cannot resolve: judged by the spelling of the callee.
_OPTIMIZER_PREFIXES = ("optim.", "torch.optim.")


def _built_optimizers(cls: ast.ClassDef) -> list[str]:
    """``X`` of ``self.X = optim.Adam(...)`` in a method of ``cls``: it holds an optimizer
    whatever its name (held-out 25, Rainbow's ``self.optimiser``)."""
    out = []
    for n in ast.walk(cls):
        if not (
            isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Call)
        ):
            continue
        t = n.targets[0]
        callee = dotted(n.value.func) or ""
        if (
            isinstance(t, ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id in SELF_NAMES
            and callee.startswith(_OPTIMIZER_PREFIXES)
            and callee.rpartition(".")[2][:1].isupper()
            and "lr_scheduler" not in callee
        ):
            out.append(t.attr)
    return out


def _constructions(model: ScriptModel, name: str) -> list[ast.Call]:
    return [c for c in model.calls if isinstance(c.func, ast.Name) and c.func.id == name]


def script_optimizer_attributes(model: ScriptModel, cls: ast.ClassDef) -> frozenset[str]:
    """``optimizer_attributes`` of a class of this script, once per parse."""
    memo: dict[int, frozenset[str]] = model.memo(("wrapped_steps", "attributes"), dict)
    if id(cls) not in memo:
        memo[id(cls)] = optimizer_attributes(model, cls, _constructions(model, cls.name))
    return memo[id(cls)]


def steps_attribute(call: ast.Call, attributes: frozenset[str] | set[str]) -> str | None:
    """``X`` of ``self.X.step()`` (no arguments: a closure goes elsewhere) when ``X`` holds an
    optimizer (named like one, or in ``attributes``)."""
    func = call.func
    if (
        call.args
        or call.keywords
        or not isinstance(func, ast.Attribute)
        or func.attr != "step"
        or not isinstance(func.value, ast.Attribute)
        or not isinstance(func.value.value, ast.Name)
        or func.value.value.id not in SELF_NAMES
    ):
        return None
    attr = func.value.attr
    return attr if optimizer_like(attr) or attr in attributes else None


def _plain_callee(model: ScriptModel) -> Callable[[ast.Call], FunctionNode | None]:
    """Functions of the script by name, methods by ``self.m()``: enough to follow a parameter
    to its callers without the step index (which asks this module)."""
    functions = {
        fn.name: fn
        for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef)
        if not isinstance(model.parent(fn), ast.ClassDef)
    }

    def resolve(call: ast.Call) -> FunctionNode | None:
        func = call.func
        if isinstance(func, ast.Name):
            return functions.get(func.id)
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in SELF_NAMES
        ):
            for a in model.ancestors(call):
                if isinstance(a, ast.ClassDef):
                    return _methods(a).get(func.attr)
        return None

    return resolve


# Methods that switch a module's (or a trainer's) mode and return the instance itself.
SELF_RETURNING_SWITCHES = frozenset({"train", "eval", "to", "cuda"})


def held_constructions(model: ScriptModel, name: ast.Name) -> list[ast.Call] | None:
    """The calls whose results ``name`` may hold: its assignments, or what the callers pass
    for the parameter it reads; None when any value is not a call or cannot be followed."""
    memo: dict[tuple[int, str], list[ast.Call] | None] = model.memo(("wrapped_steps", "held"), dict)
    fn = model.enclosing_function(name)
    key = (id(fn), name.id)
    if key not in memo:
        resolve = model.memo(("wrapped_steps", "callee"), lambda: _plain_callee(model))
        memo[key] = _values(model, name, resolve, 0)
    return memo[key]


def _values(
    model: ScriptModel,
    name: ast.Name,
    resolve: Callable[[ast.Call], FunctionNode | None],
    depth: int,
) -> list[ast.Call] | None:
    if depth > MAX_DEPTH:
        return None
    fn = model.enclosing_function(name)
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)] if fn is not None else []
    if name.id in params:
        is_method = isinstance(model.parent(fn), ast.ClassDef)
        index = params.index(name.id) - (1 if is_method else 0)
        passed: list[ast.expr] = []
        for call in model.calls:
            if resolve(call) is not fn:
                continue
            kw = next((k.value for k in call.keywords if k.arg == name.id), None)
            if kw is None and 0 <= index < len(call.args):
                if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
                    return None
                kw = call.args[index]
            if kw is None:
                return None
            passed.append(kw)
        values: list[ast.expr] = passed
    else:
        values = bound_values(model, name.id)
    if not values:
        return None
    out: list[ast.Call] = []
    for v in values:
        # ``XMemTrainer(config).train()`` (held-out 47): a mode switch returns the instance.
        while (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and v.func.attr in SELF_RETURNING_SWITCHES
            and isinstance(v.func.value, ast.Call)
        ):
            v = v.func.value
        if isinstance(v, ast.Call):
            out.append(v)
        elif isinstance(v, ast.Name):
            inner = _values(model, v, resolve, depth + 1)
            if inner is None:
                return None
            out.extend(inner)
        else:
            return None
    return out


def instance_class(model: ScriptModel, name: ast.Name) -> ast.ClassDef | None:
    """The class of this script that every value ``name`` may hold constructs."""
    classes = model.memo(
        ("wrapped_steps", "classes"),
        lambda: {c.name: c for c in model.nodes_of(ast.ClassDef) if isinstance(c, ast.ClassDef)},
    )
    values = held_constructions(model, name)
    if not values:
        return None
    found = {v.func.id for v in values if isinstance(v.func, ast.Name)}
    if len(found) != 1 or len(values) != sum(isinstance(v.func, ast.Name) for v in values):
        return None
    return classes.get(found.pop())


def workspace_step(model: ScriptModel, call: ast.Call) -> WorkspaceStep | None:
    """``opt.m()`` where ``opt`` holds an instance of a class of another module of the
    project whose method ``m`` (or a method it calls on ``self``) steps its optimizer."""
    found = workspace_steps(model, call)
    return found[0] if found else None


def workspace_steps(model: ScriptModel, call: ast.Call) -> list[WorkspaceStep]:
    """Every class ``opt`` of ``opt.m()`` may hold whose ``m`` steps its optimizer: a name
    bound in if/elif branches to different classes (TD3's ``policy = TD3.TD3(...)`` /
    ``DDPG.DDPG(...)``, held-out 18) runs the step of whichever the user picked, so the loop
    is a training loop if any of them steps."""
    memo: dict[int, list[WorkspaceStep]] = model.memo(("wrapped_steps", "steps"), dict)
    if id(call) not in memo:
        memo[id(call)] = _workspace_steps(model, call)
    return memo[id(call)]


def _workspace_steps(model: ScriptModel, call: ast.Call) -> list[WorkspaceStep]:
    func = call.func
    if (
        not isinstance(func, ast.Attribute)
        or not isinstance(func.value, ast.Name)
        or func.value.id in SELF_NAMES
        or func.attr in {"step", "backward"}
        or not model.path
        or model.path.startswith("<")
    ):
        return []
    wrappers = model.memo(("wrapped_steps", "workspace"), lambda: _workspace_wrappers(model))
    if not any(func.attr in methods for _ref, _calls, methods in wrappers.values()):
        return []  # the usual case: no wrapper class of the project is built here
    values = held_constructions(model, func.value)
    if not values:
        return []
    keys = {id(v) for v in values}
    out = []
    for ref, calls, methods in wrappers.values():
        if keys & {id(c) for c in calls} and func.attr in methods:
            step, attr, fn = methods[func.attr]
            converted = _attribute_stepped(step) is None
            out.append(
                WorkspaceStep(
                    call, ref.path, ref.name, func.attr, step, attr, converted, returns_host(fn)
                )
            )
    return out


def _workspace_wrappers(model: ScriptModel) -> dict:
    """``(file, class name) -> (ClassRef, its constructions here, {method: (inner step,
    attribute)})``
    for the classes of other modules that the script constructs and that step an optimizer."""
    from .factory_classes import factory_classes
    from .workspace_classes import call_root, chain, class_reference, class_roots, script_module

    roots = class_roots(model)
    if not roots:
        return {}  # no module of the project imported: the usual case
    module = script_module(model)
    found: dict = {}
    for call in model.calls:
        if call_root(call.func) not in roots:
            continue
        ref = class_reference(module, call.func)
        # ``model = define_Model(opt)``: each class the factory may return (factory_classes).
        refs = [ref] if ref is not None else factory_classes(model, call)
        for ref in refs:
            if ref.path == Path(model.path):
                continue
            # Keyed by file too: OurDDPG.DDPG and DDPG.DDPG are two classes (TD3's repository).
            entry = found.setdefault((str(ref.path), ref.name), [ref, [], None])
            entry[1].append(call)
    out = {}
    for name, (ref, calls, _) in found.items():
        attributes = optimizer_attributes(model, ref.node, calls)
        methods: dict[str, tuple[ast.Call, str]] = {}
        own: dict[str, FunctionNode] = {}
        for c in reversed(chain(ref)):
            own.update(_methods(c.node))
        for mname, fn in own.items():
            inner = _stepping(fn, own, attributes)
            if inner is not None:
                methods[mname] = (*inner, fn)
        if methods:
            out[name] = (ref, calls, methods)
    return out


def _stepping(
    fn: FunctionNode, methods: dict[str, FunctionNode], attributes: frozenset[str]
) -> tuple[ast.Call, str] | None:
    """The ``self.X.step()`` the method runs, in its body or a method it calls on ``self``
    (one level)."""
    for region in (fn, *_self_callees(fn, methods)):
        for n in ast.walk(region):
            if not isinstance(n, ast.Call):
                continue
            attr = steps_attribute(n, attributes) or _converted_attribute(n)
            if attr is not None:
                return n, attr
    return None


def _attribute_stepped(call: ast.Call) -> tuple[str] | None:
    """``(X,)`` for ``self.X.step()``, whatever X is named."""
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "step"
        and isinstance(func.value, ast.Attribute)
        and isinstance(func.value.value, ast.Name)
        and func.value.value.id in SELF_NAMES
    ):
        return (func.value.attr,)
    return None


def _converted_attribute(call: ast.Call) -> str | None:
    """``X`` of ``xm.optimizer_step(self.X)``: the wrapper after its step was converted (it
    still runs the training step)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "optimizer_step" or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name):
        return arg.attr if arg.value.id in SELF_NAMES else None
    return None


def _self_callees(fn: FunctionNode, methods: dict[str, FunctionNode]) -> list[FunctionNode]:
    out = []
    for n in ast.walk(fn):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id in SELF_NAMES
            and (m := methods.get(n.func.attr)) is not None
            and m is not fn
        ):
            out.append(m)
    return out
