"""Whether the model passes through a call that may already reduce its gradients.

``model = DDP(model)`` all-reduces the gradients during backward, and the analysis sees it
(``frameworks.REDUCING_WRAPPERS``). ``model = smart_DDP(model)`` (yolov5's
``utils/torch_utils``) does the same inside a helper: adding ``xm.reduce_gradients`` after
the backward would then all-reduce a second time every micro-step. So a call that takes the
model and returns it (or a wrapper of it) is classified:

- *reducing*: its body, seen in this file or in a workspace module found through the
  script's imports (``workspace_calls.helper_target``), wraps the model in DDP/FSDP
  (directly, in a local helper it calls, or as a local class deriving from one);
- *unseen*: a library's function or class xla-lens cannot read (not torch's own), or a
  helper whose body hands the model to such a call named like a DDP wrapper;
- otherwise it is seen and does not reduce: it is not reported.

Only calls that return the model count: ``model = f(model)`` (or ``model, opt = f(model,
opt)``), or ``model = f(net.cuda(rank))`` where ``model.parameters()`` is used; never a
factory such as ``model = Model(cfg)``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .frameworks import REDUCING_WRAPPERS
from .model import ScriptModel, dotted, method_name, receiver
from .workspace_calls import helper_target, parsed_module

# Words in a name that say it may wrap the model for data parallelism.
DDP_WORDS = ("ddp", "distributed", "parallel", "fsdp", "shard")
# Libraries whose calls xla-lens knows do not all-reduce unless listed as reducing.
KNOWN_LIBRARIES = ("torch.", "torch_xla.", "torchvision.")
MODULE_METHODS = {"parameters", "named_parameters"}
MOVE_METHODS = {"cuda", "to"}
_CACHE_LIMIT = 64
# (path, size, mtime) -> names of the module's functions that wrap in DDP/FSDP
_reducing_cache: dict[tuple[str, int, int], frozenset[str]] = {}


@dataclass(frozen=True)
class Wrapping:
    call: ast.Call  # ``smart_DDP(model)``
    name: str  # as the script spells it
    target: str  # the model's path: ``model``
    kind: str  # "reducing" or "unseen"


def ddp_named(name: str) -> bool:
    low = name.lower()
    return any(word in low for word in DDP_WORDS)


def _module_paths(model: ScriptModel) -> set[str]:
    """Paths whose ``.parameters()`` is used: modules, not tensors."""
    out = set()
    for call in model.method_calls(*MODULE_METHODS):
        path = dotted(receiver(call)) if receiver(call) is not None else None
        if path is not None:
            out.add(path)
    return out


def _is_module_expr(node: ast.expr, modules: set[str]) -> bool:
    if dotted(node) in modules:
        return True
    # ``net.cuda(rank)`` / ``torch.nn.Linear(4, 1).to(device)``: a module moved on its way in.
    return isinstance(node, ast.Call) and method_name(node) in MOVE_METHODS


def _targets(stmt: ast.Assign) -> list[str]:
    out = []
    for target in stmt.targets:
        for elt in target.elts if isinstance(target, ast.Tuple | ast.List) else [target]:
            path = dotted(elt)
            if path is not None:
                out.append(path)
    return out


def _wrapped_model(stmt: ast.Assign, modules: set[str], called: set[str]) -> str | None:
    """The model path ``stmt`` binds to what its call returned from the model, if any."""
    call = stmt.value
    assert isinstance(call, ast.Call)
    args = [*call.args, *(k.value for k in call.keywords)]
    for target in _targets(stmt):
        if target not in modules and target not in called:
            continue
        if any(dotted(a) == target for a in args):
            return target  # ``model = f(model)``
        if target in modules and any(_is_module_expr(a, modules) for a in args):
            return target  # ``model = smart_DDP(net.cuda(rank))``
    return None


def _local_classes(model: ScriptModel) -> dict[str, ast.ClassDef]:
    return {
        n.name: n
        for n in model.nodes_of(ast.ClassDef)
        if isinstance(n, ast.ClassDef) and isinstance(model.parent(n), ast.Module)
    }


def _reduces_in(model: ScriptModel, roots: Iterable[ast.AST]) -> bool:
    """A DDP/FSDP call (or a local class deriving from one) in ``roots`` or in the
    functions of the same file they call, two calls deep."""
    steps = model.steps
    classes = _local_classes(model)
    seen: list[ast.AST] = []
    frontier = list(roots)
    for _ in range(3):
        found: list[ast.AST] = []
        for region in frontier:
            seen.append(region)
            for n in model.walk(region):
                if not isinstance(n, ast.Call):
                    continue
                if model.call_name(n) in REDUCING_WRAPPERS:
                    return True
                name = dotted(n.func)
                if name in classes and _derives_from_reducer(model, classes[name]):
                    return True
                target = steps.callee(n)
                if target is not None and target not in seen and target not in found:
                    found.append(target)
        frontier = found
    return False


def _derives_from_reducer(model: ScriptModel, cls: ast.ClassDef) -> bool:
    return any(model.qualname(base) in REDUCING_WRAPPERS for base in cls.bases)


def _calls_ddp_named_unseen(model: ScriptModel, fn: ast.AST) -> str | None:
    for n in model.walk(fn):
        if isinstance(n, ast.Call) and model.steps.callee(n) is None:
            name = dotted(n.func)
            if name is not None and ddp_named(name.rpartition(".")[2]):
                if not (model.call_name(n) or "").startswith(KNOWN_LIBRARIES):
                    return name
    return None


def _workspace_reducers(path: Path) -> frozenset[str]:
    """Names of the functions of the workspace module ``path`` that wrap in DDP/FSDP."""
    try:
        st = path.stat()
    except OSError:
        return frozenset()
    key = (str(path), st.st_size, st.st_mtime_ns)
    cached = _reducing_cache.get(key)
    if cached is not None:
        return cached
    parsed = parsed_module(path)
    names: frozenset[str] = frozenset()
    if parsed is not None:
        # "<sibling>": follow no further imports from the helper's module.
        other = ScriptModel(parsed.source, parsed.tree, "<sibling>")
        names = frozenset(
            name for name, fn in other.steps.module_functions.items() if _reduces_in(other, [fn])
        )
    if len(_reducing_cache) >= _CACHE_LIMIT:
        _reducing_cache.clear()
    _reducing_cache[key] = names
    return names


def clear_cache() -> None:
    _reducing_cache.clear()


def _classify(model: ScriptModel, call: ast.Call, name: str) -> str | None:
    qualname = model.call_name(call) or ""
    if qualname in REDUCING_WRAPPERS:
        return "reducing"
    last = name.rpartition(".")[2]
    local = model.steps.callee(call)
    if local is not None:
        if _reduces_in(model, [local]):
            return "reducing"
        return "unseen" if _calls_ddp_named_unseen(model, local) else None
    classes = _local_classes(model)
    if name in classes:
        return "reducing" if _derives_from_reducer(model, classes[name]) else None
    helper = helper_target(model, call)
    if helper is not None:
        return "reducing" if helper.function in _workspace_reducers(helper.path) else None
    if qualname.startswith(KNOWN_LIBRARIES):
        return None  # torch's own: seen, and not a reducer unless listed
    # A class of a library (``Model(cfg)``) is a factory unless its name says DDP.
    if last[:1].isupper() and not ddp_named(last):
        return None
    return "unseen"


def model_wrappers(model: ScriptModel, called: set[str]) -> list[Wrapping]:
    """Calls that take the model and return it, with what they do to its gradients.
    ``called``: paths the training loop calls (``model(x)``), the loop's modules."""
    modules = _module_paths(model)
    out = []
    for stmt in model.nodes_of(ast.Assign):
        assert isinstance(stmt, ast.Assign)
        call = stmt.value
        if not isinstance(call, ast.Call):
            continue
        name = dotted(call.func)
        if name is None or name.rpartition(".")[2] in MOVE_METHODS:
            continue
        target = _wrapped_model(stmt, modules, called)
        if target is None:
            continue
        kind = _classify(model, call, name)
        if kind is not None:
            out.append(Wrapping(call, name, target, kind))
    return out
