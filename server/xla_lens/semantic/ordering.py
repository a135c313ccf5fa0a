"""Which optimizer is built from a model's parameters before that model moves to a device.

On CUDA ``module.to(device)`` keeps the same Parameter objects; on XLA it creates new ones.
An optimizer built from ``model.parameters()`` before the move keeps updating the stale CPU
tensors: the loss never improves and nothing fails (verified on torch_xla 2.9).

The events are *builds* (an optimizer constructed from ``path.parameters()``) and *moves*
(``path.to(device)`` / ``path.cuda()``), found per scope by ``optimizer_events.py``.
A build followed by a move of the same module (or a parent or child of it) is stale when
the move runs later: later in the same scope, in another method of the class whose
``__init__`` built it, or in a function when the build ran at module level.
"""

from __future__ import annotations

import ast
from functools import cached_property

from .model import ScriptModel, dotted, method_name
from .optimizer_events import Event, OptimizerEvents, path_root


def _matches(a: str, b: str) -> bool:
    """Same module, or one contains the other (``model`` and ``model.fc``)."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


class Ordering(OptimizerEvents):
    """``OptimizerEvents`` put in order: which builds a later move of their module leaves stale."""

    def _runs_later(self, build: Event, move: Event) -> bool:
        if build.scope is move.scope:
            first = _start(build)
            return (move.stmt.lineno, move.stmt.col_offset) > (
                first.lineno,
                first.col_offset,
            ) and not _same_statement(self.model, build, move)
        if build.path.startswith("self.") and move.path.startswith("self."):
            return self._init_then_method(build.scope, move.scope)
        if build.scope is self.model.tree and isinstance(
            move.scope, ast.FunctionDef | ast.AsyncFunctionDef
        ):
            # A module-level optimizer and a function that moves the same global later.
            return not self._binds_locally(move.scope, path_root(move.path))
        return False

    def _init_then_method(self, first: ast.AST, second: ast.AST) -> bool:
        if not (isinstance(first, ast.FunctionDef) and first.name == "__init__"):
            return False
        cls = self.model.parent(first)
        return (
            isinstance(cls, ast.ClassDef)
            and isinstance(second, ast.FunctionDef | ast.AsyncFunctionDef)
            and self.model.parent(second) is cls
            and second is not first
        )

    @staticmethod
    def _binds_locally(fn: ast.AST, name: str) -> bool:
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            if name in Ordering._params(fn) or any(a.arg == name for a in fn.args.kwonlyargs):
                return True
        for n in ast.walk(fn):
            if isinstance(n, ast.Global) and name in n.names:
                return False
        return any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for n in ast.walk(fn)
        )

    def _rebuilt_after(self, build: Event, move: Event) -> bool:
        """Another optimizer built from the same module after the move: the stale one is
        (most likely) replaced, as in ``opt = ...; model.to(d); opt = ...``."""
        for other in self.builds:
            if other is build or not _matches(other.path, move.path):
                continue
            if self._runs_later(move, other) or (
                other.scope is move.scope and other.stmt.lineno > move.stmt.lineno
            ):
                return True
        return False

    def _moved_before(self, build: Event) -> bool:
        """The module already went to the device before the build (``model =
        Net().to(device)``, an earlier ``model.to(device)``): a later move of a module
        that is already there keeps its Parameter objects, so the optimizer is fine."""
        for move in self.moves:
            if (
                move.scope is build.scope
                and _matches(move.path, build.path)
                and move.stmt.lineno < _start(build).lineno
            ):
                return True
        root = path_root(build.path)
        for n in (
            self.model.walk_scope(build.scope)
            if build.scope is not self.model.tree
            else self.model.walk(self.model.tree)
        ):
            if not isinstance(n, ast.Assign) or n.lineno >= _start(build).lineno:
                continue
            if self.scope_of(n) is not build.scope:
                continue
            if not any(
                _matches(dotted(t) or "", build.path) or dotted(t) == root for t in n.targets
            ):
                continue
            if any(
                isinstance(c, ast.Call) and self._moves_anything(c)
                for c in self.model.walk(n.value)
            ):
                return True
        return False

    def _moves_anything(self, call: ast.Call) -> bool:
        if method_name(call) == "cuda":
            return True
        if method_name(call) != "to":
            return False
        # Same test as a move, minus the dotted receiver (``Net().to(device)``).
        fake = ast.Call(
            func=ast.Attribute(value=ast.Name("m", ast.Load()), attr="to", ctx=ast.Load()),
            args=call.args,
            keywords=call.keywords,
        )
        return self._is_device_move(fake)

    def _rebound_between(self, build: Event, move: Event) -> bool:
        if build.scope is not move.scope:
            return False
        root = path_root(move.path)
        for a in self.model.assignments.get(root, []):
            if self.scope_of(a) is not build.scope:
                continue
            if self._exclusive(a, build.stmt):
                continue  # ``if ...: opt = ...`` / ``else: model = load()``: not both run
            if _start(build).lineno < a.lineno < move.stmt.lineno or a is move.stmt:
                value = a.value
                if a is move.stmt or (
                    value is not None
                    and root in {n.id for n in self.model.walk(value) if isinstance(n, ast.Name)}
                ):
                    continue  # ``model = model.to(d)`` / ``model = DDP(model)``
                return True
        return False

    def _exclusive(self, a: ast.AST, b: ast.AST) -> bool:
        """``a`` and ``b`` sit in different branches of the same ``if``."""
        a_path = {id(n): n for n in self.model.ancestors(a)}
        child = b
        for anc in self.model.ancestors(b):
            if id(anc) in a_path and isinstance(anc, ast.If):
                in_body = any(child is s for s in anc.body)
                a_child = a
                for x in self.model.ancestors(a):
                    if x is anc:
                        break
                    a_child = x
                a_in_body = any(a_child is s for s in anc.body)
                return in_body != a_in_body
            child = anc
        return False

    @cached_property
    def stale(self) -> list[tuple[Event, Event]]:
        """(build, move) pairs where the move runs after the build of the same module."""
        out = []
        seen: set[int] = set()
        # Paths that match share their first name: pair each build only with the moves of
        # its root (in the moves' order), not with every move of a big script.
        moves_by_root: dict[str, list[Event]] = {}
        for move in self.moves:
            moves_by_root.setdefault(path_root(move.path), []).append(move)
        for build in self.builds:
            for move in moves_by_root.get(path_root(build.path), ()):
                if id(build.node) in seen or not _matches(build.path, move.path):
                    continue
                if not self._runs_later(build, move):
                    continue
                if (
                    self._rebound_between(build, move)
                    or self._rebuilt_after(build, move)
                    or self._moved_before(build)
                ):
                    continue
                seen.add(id(build.node))
                out.append((build, move))
        return out


def _start(build: Event) -> ast.stmt:
    """When the optimizer's Parameters were taken: a list of them taken earlier, else the
    optimizer's own statement."""
    return build.taken or build.stmt


def _same_statement(model: ScriptModel, a: Event, b: Event) -> bool:
    return a.stmt is b.stmt


def stale_optimizers(model: ScriptModel) -> list[tuple[Event, Event]]:
    return Ordering(model).stale
