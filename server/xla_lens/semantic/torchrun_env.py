"""torchrun's environment in a training script: who sets it, and reads of it by a loop key.

torchrun sets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` (and ``LOCAL_WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT``) for every process it starts; the XLA launcher
(``torch_xla.launch`` / ``xmp.spawn``) sets none of them. torchrun with the ``xla`` process
group is also a supported way to run PyTorch/XLA (torch_xla's ``xla://`` rendezvous reads those
very variables), so the reads are wrong only in a script the XLA launcher will start.
"""

from __future__ import annotations

import ast

from .device_intent import finished_on_xla, hand_written_xla
from .launch import is_launched
from .model import ScriptModel, const_str

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


__all__ = ["TORCHRUN_KEYS", "loop_env_keys", "runs_under_torchrun_on_xla"]
