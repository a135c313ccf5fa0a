"""torchrun's environment in a training script: who sets it, and reads of it by a loop key.

torchrun sets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` (and ``LOCAL_WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT``) for every process it starts; the XLA launcher
(``torch_xla.launch`` / ``xmp.spawn``) sets none of them. torchrun with the ``xla`` process
group is also a supported way to run PyTorch/XLA (torch_xla's ``xla://`` rendezvous reads those
very variables), so the reads are wrong only in a script the XLA launcher will start.

A script that already handles XLA may keep a torchrun (or other non-XLA) mode beside it:
``if "WORLD_SIZE" in os.environ: <torchrun> else: xmp.spawn(_mp_fn)``. That mode's side of
the switch runs only where the XLA launcher does not (``torchrun_side``).
"""

from __future__ import annotations

import ast

from .binding_sets import loads_of_assigned_name
from .device_intent import being_converted, finished_on_xla, hand_written_xla
from .launch import is_launched
from .model import ScriptModel, const_str
from .rank_guards import call_sites

TORCHRUN_KEYS = frozenset(
    {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}
)
ENV_GETTERS = frozenset({"os.environ.get", "os.getenv"})
COMPREHENSIONS = (ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp)


def runs_under_torchrun_on_xla(model: ScriptModel) -> bool:
    """The script is an XLA script already and nothing in it starts the XLA launcher: torchrun
    (or a plain single-process run) starts it, and torchrun's variables are right there.

    "An XLA script" is torch_xla API that no xla-lens fix writes (``hand_written_xla``), or no
    CUDA left, the XLA device named and an XLA loop run (``finished_on_xla``). Known limit (the
    one ``being_converted`` documents, and XLA204 shares): a CUDA script whose other fixes were
    all applied but that got no launcher reads the same, and is then taken for a torchrun
    script, which it can be run as (XLA205 kept its process group, on the xla backend)."""
    if is_launched(model) or not model.uses_torch_xla:
        return False
    return hand_written_xla(model) or finished_on_xla(model)


def _env_read_key(model: ScriptModel, node: ast.AST) -> ast.expr | None:
    """The key expression of ``os.environ[k]`` (a read), ``os.environ.get(k)``,
    ``os.getenv(k)``."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and model.qualname(node.value) == "os.environ"
    ):
        return node.slice
    if isinstance(node, ast.Call) and model.call_name(node) in ENV_GETTERS and node.args:
        return node.args[0]
    return None


def _constant_strings(model: ScriptModel, node: ast.expr) -> list[str] | None:
    """``("RANK", "WORLD_SIZE")`` written out, or a module-level name bound once to one."""
    if isinstance(node, ast.Name):
        bound = [
            s.value
            for s in model.tree.body
            if isinstance(s, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == node.id for t in s.targets)
        ]
        if len(bound) != 1:
            return None
        node = bound[0]
    if not isinstance(node, ast.Tuple | ast.List | ast.Set):
        return None
    keys = [const_str(e) for e in node.elts]
    return [k for k in keys if k is not None] if all(k is not None for k in keys) else None


def loop_env_keys(model: ScriptModel, node: ast.AST) -> list[str]:
    """The variable names an env read by a loop key reads: ``{k: os.environ[k] for k in
    ("RANK", "LOCAL_RANK", ...)}`` or ``for k in KEYS: cfg[k] = os.getenv(k)``. Empty for
    anything else (a constant key, a key the analysis cannot enumerate)."""
    key = _env_read_key(model, node)
    if not isinstance(key, ast.Name):
        return []
    for a in model.ancestors(node):
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return []
        loops = (
            a.generators if isinstance(a, COMPREHENSIONS) else [a] if isinstance(a, ast.For) else []
        )
        for loop in loops:
            if isinstance(loop.target, ast.Name) and loop.target.id == key.id:
                return _constant_strings(model, loop.iter) or []
    return []


# The runtime's rank answers (2.x and legacy spellings).
RUNTIME_RANK_CALLS = frozenset(
    {
        "torch_xla.runtime.global_ordinal",
        "torch_xla.runtime.local_ordinal",
        "torch_xla.runtime.world_size",
        "torch_xla.core.xla_model.get_ordinal",
        "torch_xla.core.xla_model.get_local_ordinal",
        "torch_xla.core.xla_model.xrt_world_size",
    }
)
LAUNCHERS = frozenset({"torch_xla.launch", "torch_xla.distributed.xla_multiprocessing.spawn"})
# What only the XLA side of a switch runs: the XLA launcher, or the runtime's rank answers.
XLA_SIDE_CALLS = LAUNCHERS | RUNTIME_RANK_CALLS
EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})
# A function called only from the torchrun side (and what it calls) is on that side too.
FOLLOW_DEPTH = 2


def torchrun_side(model: ScriptModel, node: ast.AST) -> bool:
    """``node`` runs only on the other side of a switch the script makes between XLA and
    another mode (torchrun, a CUDA or CPU run), or it is the test of such a switch.

    A switch is an ``if`` (or ``a if c else b``) one side of which starts the XLA launcher or
    asks the XLA runtime for the rank or world size (directly, or through a function of this
    script that starts the launcher) while the other side does neither: that side is the
    ``else`` (or the body), or, for ``if "RANK" in os.environ: ...; return`` before the
    launch, the body that leaves. What the other side reads from torchrun's environment is
    what its author meant: the XLA launcher never runs it. Functions every call of which is on
    that side are on it too.

    Only in a script that handles XLA already (not ``being_converted``): the fixes write the
    same XLA calls, and one quick fix applied in a CUDA script (``rank = xr.global_ordinal()``
    in one branch) must not silence the findings of the other branch."""
    roots = model.memo(torchrun_side, lambda: _torchrun_roots(model))
    if not roots:
        return False
    return node in roots or any(a in roots for a in model.ancestors(node))


def _torchrun_roots(model: ScriptModel) -> set[ast.AST]:
    if not model.uses_torch_xla or being_converted(model):
        return set()
    direct = [c for c in model.calls if model.call_name(c) in XLA_SIDE_CALLS]
    if not direct:
        return set()
    # A helper that starts the launcher (``launch_xla()``) is the XLA side where it is called;
    # one that asks the runtime for the rank may serve the torchrun side too (xla:// works).
    holders = {
        f
        for c in direct
        if model.call_name(c) in LAUNCHERS and (f := model.enclosing_function(c)) is not None
    }
    markers = direct + [c for c in model.calls if model.steps.callee(c) in holders]
    roots: set[ast.AST] = set()
    for marker in markers:
        for a in model.ancestors(marker):
            if isinstance(a, ast.If | ast.IfExp):
                side = _other_side(a, marker, model)
                if side:
                    _add_side(model, a.test, side, markers, roots)
            if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                break
        for block_stmt in model.ancestors(marker):
            if isinstance(block_stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                break
            for earlier in _earlier_siblings(model, block_stmt):
                if isinstance(earlier, ast.If) and not earlier.orelse and _leaves(earlier.body):
                    _add_side(model, earlier.test, earlier.body, markers, roots)
    if roots:
        _add_callees(model, roots)
    return roots


def _other_side(node: ast.If | ast.IfExp, marker: ast.AST, model: ScriptModel) -> list[ast.AST]:
    """The side of ``node`` that does not hold ``marker``: ``else`` for a marker in the body,
    the body for one in the ``else``, nothing for one in the test."""
    child = marker
    for a in model.ancestors(marker):
        if a is node:
            break
        child = a
    body = node.body if isinstance(node.body, list) else [node.body]
    orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
    if child in body:
        return list(orelse)
    if child in orelse:
        return list(body)
    return []


def _earlier_siblings(model: ScriptModel, stmt: ast.AST) -> list[ast.stmt]:
    parent = model.parent(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and stmt in block:
            return block[: block.index(stmt)]
    return []


def _leaves(body: list[ast.stmt]) -> bool:
    last = body[-1]
    if isinstance(last, ast.Return | ast.Raise):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and (ast.unparse(last.value.func) in EXITS)
    )


def _add_side(
    model: ScriptModel,
    test: ast.expr,
    side: list[ast.AST],
    markers: list[ast.Call],
    roots: set[ast.AST],
) -> None:
    inside = set(side)
    if any(m in inside or any(a in inside for a in model.ancestors(m)) for m in markers):
        return  # both sides reach XLA: not a switch between XLA and another mode
    roots.add(test)
    roots.update(side)


def _add_callees(model: ScriptModel, roots: set[ast.AST]) -> None:
    """Functions every call of which is on the torchrun side join it, ``FOLLOW_DEPTH`` deep."""
    for _ in range(FOLLOW_DEPTH):
        added = False
        for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
            if fn in roots:
                continue
            sites = call_sites(model, fn)  # type: ignore[arg-type]
            if sites and all(any(a in roots for a in model.ancestors(s)) for s in sites):
                roots.add(fn)
                added = True
        if not added:
            break


def used_only_on_torchrun_side(model: ScriptModel, read: ast.AST) -> bool:
    """``rank = int(os.environ.get("RANK", 0))`` whose every use is on the torchrun side of a
    switch: the read itself cannot fail (a getter with a default) and its value never reaches
    the XLA side."""
    if not (isinstance(read, ast.Call) and model.call_name(read) in ENV_GETTERS):
        return False  # ``os.environ["RANK"]`` raises before the XLA side is reached
    if len(read.args) < 2 and not read.keywords:
        return False  # None: ``int(None)`` fails on the XLA side too
    uses = loads_of_assigned_name(model, model.enclosing_statement(read))
    return bool(uses) and all(torchrun_side(model, u) for u in uses)  # type: ignore[union-attr]


__all__ = [
    "TORCHRUN_KEYS",
    "loop_env_keys",
    "runs_under_torchrun_on_xla",
    "torchrun_side",
    "used_only_on_torchrun_side",
]
