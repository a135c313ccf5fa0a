"""XLA109 seen from the file that moves the model: a class (or function) of this file moves
the model it is handed, and a caller in another file built an optimizer from that model's
parameters first (SimCLR's simclr.py, whose ``__init__`` runs
``kwargs['model'].to(self.args.device)`` on the model run.py built its Adam from; held-out 34).

The callers are found by ``semantic.workspace_callers`` (read from disk, never run); the same
ordering XLA109 applies in the caller decides which builds the move makes stale. Reported at
the move here, without a fix: the change is the caller's (move first), or this file's (build the
optimizer here, after the move).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ...semantic.model import ScriptModel
from ...semantic.optimizer_events import moves_to_a_device
from ...semantic.workspace_callers import imported_elsewhere, workspace_callers
from ...semantic.workspace_moves import moved_parameters
from ..base import Finding, Severity


def _movers(model: ScriptModel) -> dict[str, ast.AST]:
    """Top-level functions and classes (their ``__init__``) that move a module handed in."""
    out: dict[str, ast.AST] = {}
    for stmt in model.tree.body:
        fn: ast.AST | None = stmt
        if isinstance(stmt, ast.ClassDef):
            fn = next(
                (s for s in stmt.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"),
                None,
            )
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and any(moved_parameters(fn)):
            out[stmt.name] = fn  # type: ignore[attr-defined]
    return out


def caller_stale_optimizers(model: ScriptModel, code: str) -> Iterator[Finding]:
    if not model.path or model.path.startswith("<"):
        return
    if ".to(" not in model.source and ".cuda(" not in model.source:
        return  # the cheap tests first: nothing here moves a module, or nothing imports it
    if not imported_elsewhere(model):
        return
    movers = _movers(model)
    if not movers:
        return
    here = Path(model.path)
    for name, fn in movers.items():
        for caller in workspace_callers(model, name):
            for build_line, move_line in caller.stale:
                move = next(
                    (
                        n
                        for n in ast.walk(fn)
                        if isinstance(n, ast.Call)
                        and n.lineno == move_line
                        and moves_to_a_device(model, n)
                    ),
                    None,
                )
                if move is None:
                    continue
                where = f"{caller.path.name}:{build_line}"
                yield Finding(
                    code,
                    f"`{model.segment(move)}` moves the model `{name}()` is handed after its "
                    f"caller built an optimizer from that model's parameters ({where}): on XLA "
                    "the move creates new Parameter objects, so that optimizer updates stale "
                    "CPU tensors and the model never trains",
                    model.span(move),
                    Severity.ERROR,
                    manual=f"Move the model to the device in {caller.path.name} before building "
                    f"the optimizer (line {build_line} there; this move then keeps its "
                    f"Parameters), or build the optimizer in {here.name} after the move.",
                )
