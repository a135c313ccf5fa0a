"""Whether an XLA process group already exists where a piece of code runs.

``dist.init_process_group(..., init_method="xla://")`` builds a real process group whose rank
and size are the XLA runtime's: torch_xla's ``xla://`` rendezvous hands back
``xr.global_ordinal()`` / ``xr.world_size()`` whatever rank or world_size the call passes
(torch_xla/_internal/rendezvous.py, 2.9). Under torchrun the ``"xla"`` backend with the default
``env://`` rendezvous builds one too, from the variables torchrun sets for its processes (one
XLA device each). Code that runs after such a call may ask ``torch.distributed`` for the rank
and world size (``DistributedSampler`` without ``num_replicas``/``rank`` does) and gets the
XLA replicas' numbers. Under the XLA launcher only ``xla://`` counts: the launcher sets none of
torchrun's variables, so ``env://`` fails there. Caveat (verified on PJRT CPU, 2.9): where the
runtime runs several replicas as threads of one process (TPU v2/v3, CPU with several devices)
those threads share torch.distributed's default group, so its rank is one thread's for all.

"After" is judged on this file's calls: an init earlier in the same function, or earlier than
every call that leads to that function (its callers, up to the module's own code). With an XLA
launcher, module-level code runs in the launcher's parent, so only inits inside functions count.
Anything out of reach (an init in another module, a function called from nowhere here) is not
taken as a group.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .arguments import literal_sources
from .calls import callee
from .diskread import read_regular
from .model import ScriptModel, arg_or_keyword, const_str
from .workspace import MAX_BYTES

INIT = "torch.distributed.init_process_group"
RUNTIME_RENDEZVOUS = ("xla://", "pjrt://")  # pjrt:// is the torch_xla 2.0 name of xla://
MAX_CALLER_DEPTH = 8

Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Module


def _backend_is_xla(model: ScriptModel, call: ast.Call) -> bool:
    backend = arg_or_keyword(call, 0, "backend")
    if backend is None:
        return False
    sources = literal_sources(model, backend)
    return bool(sources) and all(const_str(s) == "xla" for s in sources)


def makes_xla_group(model: ScriptModel, call: ast.Call, launched: bool) -> bool:
    """``call`` (an ``init_process_group``) builds a group numbered like the XLA replicas:
    the ``xla://`` rendezvous, or (without an XLA launcher, i.e. under torchrun) the "xla"
    backend with torchrun's ``env://`` rendezvous."""
    if any(kw.arg is None for kw in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args
    ):
        return False  # ``**kwargs`` may carry anything
    init_method = arg_or_keyword(call, 1, "init_method")
    method = const_str(init_method)
    if method is not None and method.startswith(RUNTIME_RENDEZVOUS):
        return True
    if launched or not (init_method is None or method == "env://"):
        return False
    return _backend_is_xla(model, call)


class _GroupOrder:
    """Calls that build the XLA group, directly or through a function of this file."""

    def __init__(self, model: ScriptModel, launched: bool, any_backend: bool = False) -> None:
        self.model = model
        self.launched = launched
        inits = [
            c
            for c in model.calls_to(INIT)
            if (torchrun_rendezvous(c) if any_backend else makes_xla_group(model, c, launched))
        ]
        self.events: dict[ast.AST, list[ast.Call]] = {}
        if not inits:
            return
        for call in inits:
            self._add(call)
        # Functions that build the group when called, and the calls of them (to a fixpoint).
        building = {model.enclosing_function(c) for c in inits} - {None}
        changed = True
        while changed:
            changed = False
            for call in model.calls:
                target = callee(model, call)
                if target is None or target[0] not in building:
                    continue
                if self._add(call):
                    changed = True
                scope = model.enclosing_function(call)
                if scope is not None and scope not in building:
                    building.add(scope)
                    changed = True

    def _add(self, call: ast.Call) -> bool:
        scope = self.model.enclosing_function(call) or self.model.tree
        if self.launched and scope is self.model.tree:
            return False  # the launcher's parent: not a replica's group
        calls = self.events.setdefault(scope, [])
        if call in calls:
            return False
        calls.append(call)
        return True

    def exists_before(self, node: ast.AST, depth: int = 0, seen: frozenset = frozenset()) -> bool:
        if not self.events:
            return False
        model = self.model
        scope: Scope = model.enclosing_function(node) or model.tree
        start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        if any((e.end_lineno, e.end_col_offset) <= start for e in self.events.get(scope, [])):
            return True
        if scope is model.tree or depth >= MAX_CALLER_DEPTH or scope in seen:
            return False
        callers = [c for c in model.calls if (callee(model, c) or (None,))[0] is scope]
        # Called from nowhere here (a launch target, a callback): its group is not in reach.
        return bool(callers) and all(
            self.exists_before(c, depth + 1, seen | {scope}) for c in callers
        )


def xla_group_exists_before(model: ScriptModel, node: ast.AST, launched: bool) -> bool:
    """An XLA process group is built before ``node`` runs, on every path this file shows.
    ``launched``: the script starts its replicas with the XLA launcher."""
    key = "_xla_lens_xla_group_order"
    order = model.__dict__.get(key)
    if order is None or order.launched != launched:
        order = model.__dict__[key] = _GroupOrder(model, launched)
    return order.exists_before(node)


def torchrun_rendezvous(call: ast.Call) -> bool:
    """An ``init_process_group`` that rendezvouses through torchrun's variables alone
    (``env://``, the default, given no rank, size or store), whatever its backend."""
    if any(kw.arg is None for kw in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args
    ):
        return False
    init_method = arg_or_keyword(call, 1, "init_method")
    given = (arg_or_keyword(call, i, k) for i, k in ((3, "world_size"), (4, "rank"), (5, "store")))
    return (init_method is None or const_str(init_method) == "env://") and all(
        g is None for g in given
    )


def torchrun_group_exists_before(model: ScriptModel, node: ast.AST) -> bool:
    """A process group numbered by torchrun's variables is built before ``node`` on every path
    this file shows (any backend: XLA205 gives an NCCL one the "xla" backend)."""
    key = "_xla_lens_torchrun_group_order"
    order = model.__dict__.get(key)
    if order is None:
        order = model.__dict__[key] = _GroupOrder(model, launched=False, any_backend=True)
    return order.exists_before(node)


def callers_build_groups(model: ScriptModel, name: str) -> bool:
    """Every module of the workspace found calling ``name`` of this file (at least one) calls
    ``init_process_group`` itself: torch.distributed's rank answers are right where ``name``
    runs (read from disk, never run; an import alias of init_process_group is not followed)."""
    from .workspace_callers import workspace_callers  # the model imports this module

    return modules_build_groups([c.path for c in workspace_callers(model, name)])


def group_built_for(model: ScriptModel, node: ast.AST) -> bool:
    """A process group exists where ``node`` runs: this file starts one, or every module
    found calling the top-level function or class around it does (OpenLTM's ``run.py``
    builds it, then runs ``Exp_Forecast``, held-out 107)."""
    if any(True for _ in model.calls_to("torch.distributed.init_process_group")):
        return True
    top: ast.AST | None = node
    while top is not None and model.parent(top) is not model.tree:
        top = model.parent(top)
    if not isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return False
    return callers_build_groups(model, top.name)


def modules_build_groups(paths: list[Path]) -> bool:
    """At least one module, and every one of them calls ``init_process_group``."""
    return bool(paths) and all(_calls_init(p) for p in paths)


def _calls_init(path: Path) -> bool:
    try:
        text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr == "init_process_group")
            or (isinstance(n.func, ast.Name) and n.func.id == "init_process_group")
        )
        for n in ast.walk(tree)
    )


__all__ = [
    "group_built_for",
    "INIT",
    "callers_build_groups",
    "makes_xla_group",
    "modules_build_groups",
    "xla_group_exists_before",
]
