"""Which calls, functions and loops of one script run a training step.

A step call is ``backward()``, an optimizer's or loss scaler's ``step()``,
``xm.optimizer_step`` or a loss scaler passed in as a parameter; ``steps.py`` follows them
into step and epoch functions and ``training_loops.py`` finds the loops that run them.
This is the model's door to both, each answer computed once per parse.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from .node_helpers import method_name, receiver
from .steps import StepIndex
from .training_loops import (
    TrainingLoop,
    find_training_loops,
    iter_loop_body_nodes,
    training_loop_of,
)
from .wrapped_steps import workspace_step

# timm's loss scalers (and the MAE/DeiT copies of them): calling one runs backward and the
# optimizer step.
LOSS_SCALER_CLASSES = frozenset({"NativeScaler", "NativeScalerWithGradNormCount", "ApexScaler"})

T = TypeVar("T")


class StepCalls:
    """Training-step questions, for a class that resolves call names, optimizers, loss
    scalers and enclosing functions and keeps ``_step_calls`` (``ScriptModel``)."""

    _step_calls: dict[int, bool]

    if TYPE_CHECKING:  # provided by ScriptModel and ScriptFacts

        def call_name(self, call: ast.Call) -> str | None: ...

        def enclosing_function(
            self, node: ast.AST
        ) -> ast.FunctionDef | ast.AsyncFunctionDef | None: ...

        def memo(self, key: object, compute: Callable[[], T]) -> T: ...

        def is_optimizer(self, node: ast.AST | None) -> bool: ...

        def _is_scaler(self, node: ast.AST | None) -> bool: ...

    def _is_step_call(self, call: ast.Call) -> bool:
        # Asked of every call by the step classification and again by the loop search.
        key = id(call)
        try:
            return self._step_calls[key]
        except KeyError:
            found = self._step_calls[key] = self._classify_step_call(call)
            return found

    def _classify_step_call(self, call: ast.Call) -> bool:
        name = method_name(call)
        if name == "backward":
            return True
        if name == "step" and (
            self.is_optimizer(receiver(call))
            or self._is_scaler(receiver(call))
            or self._scales_losses(call)
        ):
            return True
        if self.call_name(call) == "torch_xla.core.xla_model.optimizer_step":
            return True
        if self._is_passed_in_loss_scaler(call):
            return True
        # ``optimizer.step_and_update_lr()`` of a wrapper class in another module of the
        # project: its body is not this file's, so the call is the step (a class of this
        # script is followed into instead: ``StepIndex.callee``).
        return workspace_step(self, call) is not None  # type: ignore[arg-type]

    def _scales_losses(self, call: ast.Call) -> bool:
        """``scaler.step(optimizer)`` where ``scaler`` is handed in (a parameter, so no
        ``GradScaler(...)`` binding in sight) and the same function calls ``scaler.scale(...)``:
        the GradScaler's step (held-out 49's FreeYOLO ``train_one_epoch`` in engine.py)."""
        recv = receiver(call)
        if not isinstance(recv, ast.Name) or not call.args:
            return False
        fn = self.enclosing_function(call)
        if fn is None:
            return False
        return any(
            isinstance(n, ast.Call)
            and method_name(n) == "scale"
            and isinstance(receiver(n), ast.Name)
            and receiver(n).id == recv.id  # type: ignore[union-attr]
            for n in ast.walk(fn)
        )

    def _is_passed_in_loss_scaler(self, call: ast.Call) -> bool:
        """``loss_scaler(loss, optimizer, parameters=...)`` where ``loss_scaler`` is a parameter
        of the function (timm/MAE/DeiT's NativeScaler): it runs backward and the optimizer
        step out of sight, so the loop around it is a training-step loop."""
        func = call.func
        if not isinstance(func, ast.Name) or len(call.args) < 2:
            return False
        fn = self.enclosing_function(call)
        handed_in = fn is not None and func.id in {
            a.arg for a in (*fn.args.posonlyargs, *fn.args.args)
        }
        if not handed_in and func.id not in self._loss_scaler_names:
            return False
        first, second = call.args[0], call.args[1]
        return (
            isinstance(first, ast.Name) and "loss" in first.id.lower() and self.is_optimizer(second)
        )

    @cached_property
    def _loss_scaler_names(self) -> frozenset[str]:
        """Names bound to a timm-style loss scaler (``loss_scaler = NativeScaler()``, from timm
        or a project's own ``NativeScalerWithGradNormCount``): Uformer's denoising loop calls
        it in place of backward and step (held-out 72)."""
        return frozenset(
            name
            for name, assigns in self.assignments.items()  # type: ignore[attr-defined]
            for a in assigns
            if isinstance(a.value, ast.Call)
            and (self.call_name(a.value) or "").rsplit(".", 1)[-1] in LOSS_SCALER_CLASSES
        )

    @cached_property
    def steps(self) -> StepIndex:
        return StepIndex(self)  # type: ignore[arg-type]

    @cached_property
    def step_functions(self) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
        """Functions and methods of this script that run one training step per call."""
        return {fn.name: fn for fn in self.steps.step_functions}

    @cached_property
    def training_loops(self) -> list[TrainingLoop]:
        """Innermost loops that run a training step, in source order (``training_loops.py``
        says which loops those are)."""
        return find_training_loops(self)  # type: ignore[arg-type]

    def in_training_loop(self, node: ast.AST) -> TrainingLoop | None:
        return training_loop_of(self, node)  # type: ignore[arg-type]

    def nodes_in_training_loops(self) -> Iterator[tuple[TrainingLoop, ast.AST]]:
        # Several rules walk every loop body: list the nodes once per parse.
        return iter(
            self.memo(
                StepCalls.nodes_in_training_loops,
                lambda: list(iter_loop_body_nodes(self)),  # type: ignore[arg-type]
            )
        )
