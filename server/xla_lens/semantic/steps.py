"""Where a script runs its training step, and which loops are training-step loops.

Real scripts rarely write ``loss.backward()`` straight in the loop: the step lives in a
function (``train_step``), a method (``self._run_batch``), or a function imported from a
sibling module (``from engine import train_one_epoch``). Two kinds of callee matter:

- a *step function* runs one step per call (its step calls are not inside a loop of its
  own): the loop that calls it is a training-step loop, and the callee's body counts as
  inside that loop;
- an *epoch function* contains a training-step loop itself: a loop that calls it is an
  epoch loop, not a training-step loop (it must not get a second sync, and its loader is
  not the one the step iterates).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .loop_exits import leaves_after
from .workspace import FunctionFacts, function_facts_at, imported_function_facts
from .workspace_calls import helper_target
from .wrapped_steps import instance_class

if TYPE_CHECKING:
    from .model import ScriptModel

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
SELF_NAMES = frozenset({"self", "cls"})
# Callee chains deeper than this are not followed (train -> epoch -> step -> helper).
MAX_DEPTH = 4
# Top-level packages that are never a sibling module of the script.
NOT_WORKSPACE = frozenset(
    {"torch", "torch_xla", "transformers", "accelerate", "numpy", "os", "sys"}
)


def is_update_call(model: ScriptModel, call: ast.Call) -> bool:
    """A step call that updates the parameters (``opt.step()``, ``scaler.step(opt)``,
    ``xm.optimizer_step(opt)``), as opposed to ``loss.backward()``."""
    return model._is_step_call(call) and not (
        isinstance(call.func, ast.Attribute) and call.func.attr == "backward"
    )


def is_abstract(fn: FunctionNode) -> bool:
    """A method a base class leaves to its subclasses: only a docstring and ``raise
    NotImplementedError``, ``pass`` or ``...``, or decorated ``@abstractmethod``."""
    for deco in fn.decorator_list:
        name = deco.attr if isinstance(deco, ast.Attribute) else getattr(deco, "id", "")
        if name == "abstractmethod":
            return True
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring (or a bare ``...``)
    if not body:
        return True
    if len(body) != 1:
        return False
    only = body[0]
    if isinstance(only, ast.Pass):
        return True
    if isinstance(only, ast.Raise) and only.exc is not None:
        exc = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def func_name(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else ""


def switched_off_step(call: ast.Call, fn: FunctionNode, model: ScriptModel) -> bool:
    """``self.run_step(model, x, y, train=False)`` where every step call of ``run_step`` sits
    under ``if train:``: this call runs no step (deep-supervised-hashing's test loop,
    held-out 161, is an evaluation loop, not a second training loop)."""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if params and params[0] in SELF_NAMES and isinstance(call.func, ast.Attribute):
        params = params[1:]
    off = {
        kw.arg
        for kw in call.keywords
        if kw.arg is not None and isinstance(kw.value, ast.Constant) and kw.value.value is False
    }
    off |= {
        params[i]
        for i, a in enumerate(call.args)
        if i < len(params) and isinstance(a, ast.Constant) and a.value is False
    }
    if not off:
        return False
    steps = [n for n in model.walk_scope(fn) if isinstance(n, ast.Call) and model._is_step_call(n)]
    return bool(steps) and all(_guarded_by(model, n, fn, off) for n in steps)


def _guarded_by(model: ScriptModel, node: ast.AST, fn: FunctionNode, flags: set[str]) -> bool:
    child = node
    for a in model.ancestors(node):
        if a is fn:
            return False
        if (
            isinstance(a, ast.If)
            and isinstance(a.test, ast.Name)
            and a.test.id in flags
            and any(child is s for s in a.body)
        ):
            return True
        child = a
    return False


@dataclass(frozen=True)
class ExternalStep:
    """A step function of a sibling module called from a loop of this script."""

    call: ast.Call
    module: str
    function: str
    syncs: bool


class StepIndex:
    """Step and epoch functions of one script, and the callee of each local call."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self.module_functions: dict[str, FunctionNode] = {}
        self._methods: dict[ast.ClassDef, dict[str, FunctionNode]] = {}
        self._classes: dict[str, ast.ClassDef] = {}
        for cls in model.nodes_of(ast.ClassDef):
            assert isinstance(cls, ast.ClassDef)
            self._classes.setdefault(cls.name, cls)
            self._methods[cls] = {
                s.name: s for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
            }
        for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
            assert isinstance(fn, FunctionNode)
            if not isinstance(model.parent(fn), ast.ClassDef):
                self.module_functions.setdefault(fn.name, fn)
        self._method_names = {m for methods in self._methods.values() for m in methods}
        self._from_imports: dict[str, tuple[str, str, int]] = {}
        for imp in model.import_nodes:  # source order: the last import of a name wins
            if isinstance(imp, ast.ImportFrom):
                for a in imp.names:
                    self._from_imports[a.asname or a.name] = (imp.module or "", a.name, imp.level)
        self.step_functions: set[FunctionNode] = set()
        self.epoch_functions: set[FunctionNode] = set()
        self._calls_of: dict[FunctionNode, list[tuple[ast.Call, FunctionNode]]] = {}
        self._classify()

    # --- resolving calls ----------------------------------------------------------------
    def _enclosing_class(self, node: ast.AST) -> ast.ClassDef | None:
        for a in self.model.ancestors(node):
            if isinstance(a, ast.ClassDef):
                return a
        return None

    def _method(self, cls: ast.ClassDef, name: str, depth: int = 0) -> FunctionNode | None:
        found = self._methods.get(cls, {}).get(name)
        if found is not None or depth > 3:
            return found
        for base in cls.bases:  # a base class defined in this same file
            if isinstance(base, ast.Name) and base.id in self._classes:
                found = self._method(self._classes[base.id], name, depth + 1)
                if found is not None:
                    return found
        return None

    def _override(self, cls: ast.ClassDef, name: str) -> FunctionNode | None:
        """The first concrete ``name`` of a subclass of ``cls`` in this file (source order)."""
        for sub in self._methods:
            if sub is cls or not any(
                isinstance(b, ast.Name) and b.id == cls.name for b in sub.bases
            ):
                continue
            found = self._methods[sub].get(name)
            if found is not None and not is_abstract(found):
                return found
            found = self._override(sub, name) if sub is not cls else None
            if found is not None:
                return found
        return None

    def _self_method(self, cls: ast.ClassDef, name: str) -> FunctionNode | None:
        found = self._method(cls, name)
        if found is not None and is_abstract(found):
            # Detectron2-style ``TrainerBase.train`` loops over ``self.run_step()``, which
            # the base leaves abstract: the subclasses defined here run the step
            # (Pointcept's SimpleTrainer / AMPTrainer, held-out 149).
            return self._override(cls, name) or found
        return found

    def callee(self, call: ast.Call) -> FunctionNode | None:
        """The function of this script that ``call`` runs: ``f(...)`` for a function defined
        here, ``self.m(...)`` for a method of the caller's class (or a base class here)."""
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in self.model.imports:
                return None
            found = self.module_functions.get(func.id)
            if found is None and "__call__" in self._method_names:
                # ``loss_compute(out, y, n)`` where every caller hands ``loss_compute`` an
                # instance of a class of this script: its ``__call__`` runs (ChineseNMT's
                # ``LossCompute`` steps the optimizer inside, held-out 98).
                cls = instance_class(self.model, func)
                return self._method(cls, "__call__") if cls is not None else None
            return found
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in SELF_NAMES
        ):
            cls = self._enclosing_class(call)
            return self._self_method(cls, func.attr) if cls is not None else None
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id not in self.model.imports
            and func.attr in self._method_names
        ):
            # ``opt.step_and_update_lr()`` where ``opt`` holds an instance of a class of this
            # script (``opt = WarmupOptim(...)``, or passed in by every caller): its method runs.
            cls = instance_class(self.model, func.value)
            return self._method(cls, func.attr) if cls is not None else None
        return None

    def _local_calls(self, fn: FunctionNode) -> list[tuple[ast.Call, FunctionNode]]:
        # Asked again on every classification round and for every loop's closure: resolve
        # each function's calls once.
        found = self._calls_of.get(fn)
        if found is None:
            found = self._calls_of[fn] = [
                (node, target)
                for node in self.model.walk_scope(fn)
                if isinstance(node, ast.Call)
                and (target := self.callee(node)) is not None
                and target is not fn
            ]
        return found

    # --- classification -------------------------------------------------------------
    def _classify(self) -> None:
        model = self.model
        functions = [*self.module_functions.values()]
        for methods in self._methods.values():
            functions.extend(methods.values())
        for fn in functions:
            # One walk of each body serves both questions: which calls are steps, and which
            # call functions of this script (what ``_local_calls`` keeps for the rounds below).
            local: list[tuple[ast.Call, FunctionNode]] = []
            for node in model.walk_scope(fn):
                if not isinstance(node, ast.Call):
                    continue
                if model._is_step_call(node):
                    # A backward() in a loop with the optimizer step after it is gradient
                    # accumulation inside one step, not a loop over steps.
                    if _repeated(model, node) and is_update_call(model, node):
                        self.epoch_functions.add(fn)
                    else:
                        self.step_functions.add(fn)
                target = self.callee(node)
                if target is not None and target is not fn:
                    local.append((node, target))
            self._calls_of.setdefault(fn, local)
        for _ in range(MAX_DEPTH):
            changed = False
            for fn in functions:
                if fn in self.epoch_functions:
                    continue
                for call, target in self._local_calls(fn):
                    in_loop = _repeated(model, call)
                    if target in self.epoch_functions or (in_loop and self._runs_step(target)):
                        self.epoch_functions.add(fn)
                        changed = True
                        break
                    if (
                        not in_loop
                        and target in self.step_functions
                        and fn not in self.step_functions
                    ):
                        self.step_functions.add(fn)
                        changed = True
            if not changed:
                break
        # A function that loops over steps itself is an epoch function, whatever else it does.
        self.step_functions -= self.epoch_functions

    def _runs_step(self, fn: FunctionNode) -> bool:
        return fn in self.step_functions

    def step_callee(self, call: ast.Call) -> FunctionNode | None:
        target = self.callee(call)
        if target is None or target not in self.step_functions:
            return None
        if switched_off_step(call, target, self.model):
            return None
        return target

    def calls_epoch_function(self, call: ast.Call) -> bool:
        target = self.callee(call)
        if target is not None:
            return target in self.epoch_functions
        facts = self.external(call)
        return facts is not None and facts.kind == "epoch"

    def callee_closure(self, fns: Iterable[FunctionNode]) -> list[FunctionNode]:
        """``fns`` and the step functions they call, transitively (deduplicated, in order)."""
        out: list[FunctionNode] = []
        todo = list(fns)
        while todo:
            fn = todo.pop(0)
            if fn in out:
                continue
            out.append(fn)
            for _call, target in self._local_calls(fn):
                if target in self.step_functions and target not in out:
                    todo.append(target)
        return out

    # --- sibling modules ------------------------------------------------------------
    def external(self, call: ast.Call) -> FunctionFacts | None:
        """Facts about an imported function of a sibling module that ``call`` runs."""
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in SELF_NAMES
        ):
            return self._inherited(call)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            # ``helpers.init_dist()`` after ``import helpers``.
            module = self.model.imports.get(func.value.id)
            if module is None:
                return self._instance_method(call)
            if module.split(".")[0] in NOT_WORKSPACE:
                return None
            found = imported_function_facts(self.model.path, module, func.attr, 0)
            return found if found is not None else self._reexported(call)
        if not isinstance(func, ast.Name):
            return None
        origin = self._import_of(func.id)
        if origin is None:
            return self._stepping_forward(call)
        module, name, level = origin
        if level == 0 and module.split(".")[0] in NOT_WORKSPACE:
            return None
        found = imported_function_facts(self.model.path, module, name, level)
        return found if found is not None else self._reexported(call)

    def _reexported(self, call: ast.Call) -> FunctionFacts | None:
        """``lib.learn_with_auto_virtual_batch(...)`` where ``lib/__init__.py`` says ``from
        .deep import *`` (tabular-dl-revisiting-models, held-out 107): the function of the
        module the package re-exports it from."""
        target = helper_target(self.model, call)
        return function_facts_at(target.path, target.function) if target is not None else None

    def _inherited(self, call: ast.Call) -> FunctionFacts | None:
        """``self.m()`` in a class of the script, ``m`` inherited from a workspace base class
        of another module (``class ClassificationTrainer(BaseTrainer)`` calling
        ``self.backward_pass(loss)``)."""
        if self.callee(call) is not None or not self._bases_elsewhere(call):
            return None
        from .workspace_classes import class_call  # noqa: PLC0415 (imports the model)

        found = class_call(self.model, call)
        if found is None:
            return None
        return function_facts_at(found.owner.path, f"{found.owner.name}.{found.method.name}")

    def _instance_method(self, call: ast.Call) -> FunctionFacts | None:
        """``kge_model.train_step(kge_model, optimizer, ...)`` where ``kge_model`` holds an
        instance of a workspace class of another module whose method runs the whole step with
        the optimizer it is handed (held-out 78, KnowledgeGraphEmbedding's static
        ``KGEModel.train_step``)."""
        from .workspace_classes import class_call  # noqa: PLC0415 (imports the model)

        try:
            found = class_call(self.model, call)
        except ValueError:  # ``from . import x`` in a package module (see helper_reads)
            return None
        if found is None or found.method.name == "__init__" or found.alternatives:
            return None
        if str(found.owner.path) == str(self.model.path):
            return None  # the script's own class: its methods are this file's step functions
        return function_facts_at(found.owner.path, f"{found.owner.name}.{found.method.name}")

    def _stepping_forward(self, call: ast.Call) -> FunctionFacts | None:
        """``model(inputs, optimizer, step, writer)`` where ``model`` holds an instance of a
        workspace class of another module whose ``forward`` runs the whole step (PointFlow,
        held-out 162). Only a stepping forward counts: a plain forward is no helper here."""
        if func_name(call) in self.module_functions or func_name(call) in self.model.imports:
            return None
        facts = self._instance_method(call)
        return facts if facts is not None and facts.kind == "step" else None

    def _bases_elsewhere(self, call: ast.Call) -> bool:
        """The class around ``call`` names a base imported from another module (the cheap
        test before the workspace is read)."""
        cls = self._enclosing_class(call)
        return cls is not None and any(
            isinstance(b, ast.Name) and b.id in self._from_imports for b in cls.bases
        )

    def _import_of(self, local: str) -> tuple[str, str, int] | None:
        """``(module, name, level)`` of the ``from module import name`` that binds ``local``."""
        return self._from_imports.get(local)

    def external_step(self, call: ast.Call) -> ExternalStep | None:
        facts = self.external(call)
        if facts is None or facts.kind != "step":
            return None
        return ExternalStep(call, facts.module, facts.name, facts.syncs)


def _repeated(model: ScriptModel, call: ast.Call) -> bool:
    """In a loop that goes round again after the call (not an out-of-memory retry that
    returns once the call succeeded: semantic/loop_exits.py)."""
    loop = model.innermost_loop(call)
    return loop is not None and not leaves_after(model, loop, call)


EXIT_CALLS = frozenset({"exit", "quit"})


def _is_exit_guard(stmt: ast.stmt) -> bool:
    """``if step >= max_steps: break`` (or continue/return/sys.exit()) with nothing else."""
    if not isinstance(stmt, ast.If) or stmt.orelse:
        return False
    for s in stmt.body:
        if isinstance(s, ast.Break | ast.Continue | ast.Return | ast.Pass):
            continue
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            f = s.value.func
            name = (
                f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            )
            if name in EXIT_CALLS:
                continue
        return False
    return True


def trailing_exit_guard(loop: ast.For | ast.While | ast.AsyncFor) -> ast.stmt | None:
    """The first of the exit checks that end the loop body: a sync after them would be
    skipped on the step that leaves the loop."""
    body = loop.body
    i = len(body)
    while i > 1 and _is_exit_guard(body[i - 1]):
        i -= 1
    return body[i] if i < len(body) else None
