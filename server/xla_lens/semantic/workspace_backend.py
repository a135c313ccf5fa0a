"""Which parameter of a workspace helper becomes the process-group backend.

``launch(main, n, backend=args.dist_backend)`` (YOLOX's ``yolox/core/launch.py``, detectron2's
``launch``) hands the backend to a worker it spawns, which calls
``dist.init_process_group(backend=backend, ...)``. The script's ``--dist-backend`` default
"nccl" is then the process group's backend, though nothing in the script initialises one.
``backend_parameter`` follows a helper's parameter through the module's own functions: a
direct call (``_init(backend)``), a spawn (``mp.spawn(_worker, args=(..., backend, ...))``,
``mp.start_processes``: the worker gets the process index first) or a
``Process(target=_worker, args=(...))``, a few calls deep, to the backend argument of an
``init_process_group`` call. Read from disk through ``workspace_calls.parsed_module``
(cached per file version); never imported or run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .workspace_calls import HelperTarget, ParsedModule, parsed_module

MAX_DEPTH = 3
INIT = "init_process_group"
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class BackendParameter:
    name: str  # the helper's parameter
    index: int | None  # its position (None: keyword-only)
    init_line: int  # 1-based line of the init_process_group call it reaches


# (path, function) -> (the module's tree it was computed on, the answer)
_cache: dict[tuple[str, str], tuple[ast.Module, BackendParameter | None]] = {}
_CACHE_LIMIT = 128


def clear_cache() -> None:
    _cache.clear()


def backend_parameter(helper: HelperTarget) -> BackendParameter | None:
    """The parameter of ``helper`` that reaches ``init_process_group``'s backend, or None."""
    module = parsed_module(helper.path)
    if module is None or INIT not in module.source:
        return None
    key = (str(helper.path), helper.function)
    hit = _cache.get(key)
    if hit is not None and hit[0] is module.tree:
        return hit[1]
    fn = module.functions.get(helper.function)
    found = None
    if fn is not None:
        for param, index in _parameters(fn):
            line = _reaches_init(module, fn, param, 0)
            if line:
                found = BackendParameter(param, index, line)
                break
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[key] = (module.tree, found)
    return found


def _parameters(fn: FunctionNode) -> list[tuple[str, int | None]]:
    positional = [*fn.args.posonlyargs, *fn.args.args]
    out: list[tuple[str, int | None]] = [(a.arg, i) for i, a in enumerate(positional)]
    out += [(a.arg, None) for a in fn.args.kwonlyargs]
    return out


def _is_param(node: ast.AST | None, param: str) -> bool:
    return isinstance(node, ast.Name) and node.id == param


def _reaches_init(module: ParsedModule, fn: FunctionNode, param: str, depth: int) -> int:
    """1-based line of the init_process_group whose backend ``param`` of ``fn`` becomes."""
    if depth > MAX_DEPTH:
        return 0
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called == INIT:
            backend = node.args[0] if node.args else None
            for kw in node.keywords:
                if kw.arg == "backend":
                    backend = kw.value
            if _is_param(backend, param):
                return node.lineno
            continue
        for target, passed in _handed_on(module, node, param):
            line = _reaches_init(module, target, passed, depth + 1)
            if line:
                return line
    return 0


def _handed_on(module: ParsedModule, call: ast.Call, param: str) -> list[tuple[FunctionNode, str]]:
    """The module's functions ``call`` runs with ``param``, and that parameter's name there."""
    out: list[tuple[FunctionNode, str]] = []
    if isinstance(call.func, ast.Name) and call.func.id in module.functions:
        target = module.functions[call.func.id]
        positional = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            if _is_param(arg, param) and i < len(positional):
                out.append((target, positional[i]))
        out += [(target, kw.arg) for kw in call.keywords if kw.arg and _is_param(kw.value, param)]
    # ``mp.spawn(_worker, args=(...))`` (the index comes first) or
    # ``Process(target=_worker, args=(...))``.
    packed = next((kw.value for kw in call.keywords if kw.arg == "args"), None)
    if not isinstance(packed, ast.Tuple):
        return out
    worker, offset = None, 1
    for kw in call.keywords:
        if kw.arg == "target":
            worker, offset = kw.value, 0
    if worker is None and call.args:
        worker = call.args[0]
    if not (isinstance(worker, ast.Name) and worker.id in module.functions):
        return out
    target = module.functions[worker.id]
    positional = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
    for i, elt in enumerate(packed.elts):
        if isinstance(elt, ast.Starred):
            break
        if _is_param(elt, param) and i + offset < len(positional):
            out.append((target, positional[i + offset]))
    return out
