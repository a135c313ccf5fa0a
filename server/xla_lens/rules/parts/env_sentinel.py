"""Reading torchrun's env vars: which key a read names, its default, and the sentinel tests
scripts use to ask "was this launched distributed?" (XLA202's detection, kept apart so the
rule module holds only its findings and fixes)."""

from __future__ import annotations

import ast
import re

from ...semantic.model import ScriptModel, const_str

ENV_GETTERS = {"os.environ.get", "os.getenv"}
# The keys whose sentinel tests stand for "launched by torchrun?".
SENTINEL_KEYS = frozenset({"LOCAL_RANK", "RANK", "WORLD_SIZE"})


def env_key(model: ScriptModel, node: ast.AST) -> str | None:
    """The key of ``os.environ["K"]`` (a read), ``os.environ.get("K", d)``, ``os.getenv("K")``."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and model.qualname(node.value) == "os.environ"
    ):
        return const_str(node.slice)
    if isinstance(node, ast.Call) and model.call_name(node) in ENV_GETTERS and node.args:
        return const_str(node.args[0])
    return None


SENTINELS = {-1, None}


def env_default(model: ScriptModel, node: ast.AST) -> object:
    """The default of ``os.environ.get("K", d)`` / ``os.getenv("K", d)`` (``...`` if none)."""
    if isinstance(node, ast.Call) and model.call_name(node) in ENV_GETTERS:
        if len(node.args) > 1:
            d = node.args[1]
        else:
            kw = next((k for k in node.keywords if k.arg == "default"), None)
            d = kw.value if kw else ast.Constant(None)
        if isinstance(d, ast.UnaryOp) and isinstance(d.op, ast.USub):
            d = d.operand
            return -d.value if isinstance(d, ast.Constant) and isinstance(d.value, int) else ...
        if isinstance(d, ast.Constant):
            v = d.value
            return int(v) if isinstance(v, str) and v.lstrip("-").isdigit() else v
    return ...


def sentinel_test(model: ScriptModel, node: ast.AST) -> tuple[ast.AST, bool] | None:
    """``int(os.environ.get("RANK", -1)) != -1``, ``"RANK" in os.environ``,
    ``os.environ.get("LOCAL_RANK") is not None``: "was this launched distributed?".
    Returns the comparison and whether it asks "distributed" (True) or "not" (False)."""
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return None
    op, left, right = node.ops[0], node.left, node.comparators[0]
    if isinstance(op, ast.In | ast.NotIn):
        key = const_str(left)
        if key in SENTINEL_KEYS and model.qualname(right) == "os.environ":
            return node, isinstance(op, ast.In)
        return None
    inner = left.args[0] if _is_int_call(left) else left
    key = env_key(model, inner)
    if key not in SENTINEL_KEYS:
        return None
    default = env_default(model, inner)
    value = _constant(right)
    if default in SENTINELS and value == default:
        if isinstance(op, ast.NotEq | ast.IsNot):
            return node, True
        if isinstance(op, ast.Eq | ast.Is):
            return node, False
    return None


def _is_int_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "int"
        and len(node.args) == 1
    )


def _constant(node: ast.AST) -> object:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        if isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int):
            return -node.operand.value
    if isinstance(node, ast.Constant):
        return node.value
    return ...


DEVICE_WORDS = re.compile(r"device|cuda|gpu", re.IGNORECASE)


def device_setup_in_branch(model: ScriptModel, node: ast.AST, distributed: bool) -> ast.AST | None:
    """The first device placement (``device_map = {"": local_rank}``, ``torch.cuda.set_device``)
    in the branch the sentinel test selects for a torchrun launch: on CUDA it ran under torchrun
    only, and under the XLA launcher (no env var) it was skipped."""
    parent, negated = model.parent(node), False
    while isinstance(parent, ast.BoolOp | ast.UnaryOp):
        negated ^= isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
        parent = model.parent(parent)
    if not isinstance(parent, ast.If):
        return None
    branch = parent.body if distributed != negated else parent.orelse
    for stmt in branch:
        for n in ast.walk(stmt):
            ident = (
                n.id
                if isinstance(n, ast.Name)
                else n.attr
                if isinstance(n, ast.Attribute)
                else None
            )
            if ident is not None and DEVICE_WORDS.search(ident):
                return stmt
    return None


def membership_guarded(model: ScriptModel, node: ast.Subscript) -> bool:
    """``os.environ[key]`` under ``if key in os.environ:`` (timm's rank loop) or in the
    chosen branch of ``os.environ[key] if key in os.environ else 1`` (GPEN): no KeyError."""
    key = model.segment(node.slice)
    mapping = model.segment(node.value)
    child: ast.AST = node
    for anc in model.ancestors(node):
        test = anc.test if isinstance(anc, ast.If | ast.IfExp) and child is not anc.test else None
        guarded = (
            child in anc.body if isinstance(anc, ast.If) else child is getattr(anc, "body", None)
        )
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.In)
            and model.segment(test.left) == key
            and model.segment(test.comparators[0]) == mapping
            and guarded
        ):
            return True
        child = anc
    return False
