"""accelerate's ``prepare`` as a device move, for the optimizer-before-move ordering.

On XLA ``accelerator.prepare(model)`` moves the model and so creates new Parameter
objects. accelerate re-maps an optimizer onto them only when the optimizer is prepared in
the same ``prepare()`` call as the model (``_remap_optimizer_parameters`` sees the
arguments of one call). An optimizer built from the model's parameters earlier and prepared
on its own (``opt = acc.prepare(Adam(model.parameters()))`` then ``model =
acc.prepare(model)``), or not prepared at all, keeps stepping the stale CPU tensors: the
model never trains and nothing fails (verified with accelerate 1.16 on torch_xla 2.9).

``PrepareOrdering`` is ``Ordering`` with these moves added, with optimizer factories of
unknown libraries (``get_adam_optimizer(model.parameters())``) counted as builds, and with
a build and a prepare of the same call's arguments never paired.
"""

from __future__ import annotations

import ast
from functools import cached_property

from .model import ScriptModel, dotted, method_name, receiver
from .optimizer_events import Event
from .ordering import Ordering

ACCELERATOR_CLASSES = {"accelerate.Accelerator", "accelerate.accelerator.Accelerator"}
PREPARE_METHODS = {"prepare", "prepare_model"}
# Words in a callee's name that say it makes an optimizer from the parameters it is given
# (``get_adam_optimizer``, ``create_optimizer``, ``build_sgd``); a bare name is not enough
# for ``clip_grad_norm_(model.parameters())`` or ``EMA(model.parameters())``.
FACTORY_WORDS = ("optim", "adam", "sgd")


def is_prepare_move(event: Event) -> bool:
    """``event`` is a move made by ``accelerator.prepare(...)`` / ``prepare_model(...)``."""
    return (
        not event.via
        and isinstance(event.node, ast.Call)
        and method_name(event.node) in PREPARE_METHODS
    )


def _literal_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _literal_true(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


class PrepareOrdering(Ordering):
    # --- accelerators -----------------------------------------------------------------------
    @cached_property
    def _accelerators(self) -> dict[str, bool]:
        """Paths bound to ``Accelerator(...)``: True when its ``prepare`` moves the model
        (False for ``device_placement=False`` or ``cpu=True``: nothing goes to XLA)."""
        out: dict[str, bool] = {}
        for node in self.model.nodes_of(ast.Assign):
            assert isinstance(node, ast.Assign)
            value = node.value
            if not isinstance(value, ast.Call):
                continue
            if self.model.call_name(value) not in ACCELERATOR_CLASSES:
                continue
            moves = not any(
                (k.arg == "device_placement" and _literal_false(k.value))
                or (k.arg == "cpu" and _literal_true(k.value))
                for k in value.keywords
            )
            for target in node.targets:
                path = dotted(target)
                if path is not None:
                    out[path] = out.get(path, False) or moves
        return out

    @cached_property
    def _imports_accelerate(self) -> bool:
        return any(t.split(".")[0] == "accelerate" for t in self.model.imports.values())

    def _is_accelerator(self, node: ast.AST | None) -> bool:
        path = dotted(node) if node is not None else None
        if path is None:
            return False
        if path in self._accelerators:
            return self._accelerators[path]
        # Handed in (``def train(accelerator, model)``): its name says what it is.
        return self._imports_accelerate and "accelerator" in path.rpartition(".")[2].lower()

    # --- moves ------------------------------------------------------------------------------
    @cached_property
    def _prepare_ids(self) -> set[int]:
        return {id(c) for c in self.prepare_calls}

    @cached_property
    def prepare_calls(self) -> list[ast.Call]:
        out = []
        for call in self.model.calls:
            if method_name(call) not in PREPARE_METHODS or not self._is_accelerator(receiver(call)):
                continue
            # ``device_placement=[...]`` / ``=False``: it may leave the model where it is.
            if any(k.arg == "device_placement" for k in call.keywords):
                continue
            out.append(call)
        return out

    @cached_property
    def _prepare_moves(self) -> list[Event]:
        out = []
        for call in self.prepare_calls:
            stmt = self.model.enclosing_statement(call)
            if stmt is None:
                continue
            args = call.args[:1] if method_name(call) == "prepare_model" else call.args
            for arg in args:
                path = dotted(arg)
                if path is not None:
                    out.append(Event(call, stmt, self.scope_of(call), path))
        return out

    @cached_property
    def moves(self) -> list[Event]:
        # The base's computation, not ``super().moves``: that would cache the base's list
        # under the same attribute name.
        return [*Ordering.moves.func(self), *self._prepare_moves]

    # --- builds -----------------------------------------------------------------------------
    def _is_factory(self, call: ast.Call) -> bool:
        name = dotted(call.func)
        if name is None:
            return False
        last = name.rpartition(".")[2].lower()
        return any(word in last for word in FACTORY_WORDS) and "schedul" not in last

    @cached_property
    def _factory_builds(self) -> list[Event]:
        """``get_adam_optimizer(model.parameters())``: an optimizer from a library that
        cannot be seen. Only in scripts that prepare with accelerate, where it matters."""
        if not self.prepare_calls:
            return []
        known = {id(e.node) for e in self._base_builds}
        out = []
        for call in self.model.calls:
            if id(call) not in known and self._is_factory(call):
                out.extend(self.build_events(call))
        return out

    @cached_property
    def _base_builds(self) -> list[Event]:
        return Ordering.builds.func(self)

    @cached_property
    def builds(self) -> list[Event]:
        return [*self._base_builds, *self._factory_builds]

    # --- order ------------------------------------------------------------------------------
    def _optimizer_names(self, build: Event) -> set[str]:
        """The names the statement of ``build`` binds, except the model's own."""
        stmt = build.stmt
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = list(stmt.targets)
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            targets = [stmt.target]
        names = set()
        for target in targets:
            for elt in target.elts if isinstance(target, ast.Tuple | ast.List) else [target]:
                path = dotted(elt)
                if path is not None and path != build.path:
                    names.add(path)
        return names

    def _takes(self, call: ast.Call, build: Event, names: set[str]) -> bool:
        if any(isinstance(a, ast.Starred) for a in call.args):
            return True  # ``prepare(model, *objects)``: it cannot be told apart
        for arg in call.args:
            if dotted(arg) in names or any(n is build.node for n in self.model.walk(arg)):
                return True
        return False

    def prepared_together(self, build: Event, move: Event) -> bool:
        """The prepare call of ``move`` also takes the optimizer of ``build``, so accelerate
        re-maps it; or another prepare call takes both the model and the optimizer: the
        separate one is most likely the other branch (``if sched: model, opt, sched, dl =
        prepare(...)`` / ``else: model, dl = prepare(model, dl)``)."""
        call = move.node
        assert isinstance(call, ast.Call)
        names = self._optimizer_names(build)
        if self._takes(call, build, names):
            return True
        return any(
            self._takes(other, build, names) and any(dotted(a) == move.path for a in other.args)
            for other in self.prepare_calls
            if other is not call
        )

    @cached_property
    def _factory_ids(self) -> set[int]:
        return {id(e.node) for e in self._factory_builds}

    def _runs_later(self, build: Event, move: Event) -> bool:
        prepare = is_prepare_move(move) and id(move.node) in self._prepare_ids
        if prepare and self.prepared_together(build, move):
            return False
        if not prepare and id(build.node) in self._factory_ids:
            # Named like an optimizer only: enough beside accelerate's own prepare, not to
            # pair with every ``.to()`` (``text_encoder.to(device)`` when it is not trained).
            return False
        return super()._runs_later(build, move)


def stale_optimizers(model: ScriptModel) -> list[tuple[Event, Event]]:
    """(build, move) pairs: ``.to()``/``.cuda()`` moves and accelerate's ``prepare``."""
    return PrepareOrdering(model).stale
