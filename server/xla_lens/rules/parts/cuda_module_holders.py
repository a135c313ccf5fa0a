"""XLA405's idioms that reach CUDA without naming ``torch.cuda`` at the call: a device module
that falls back to ``torch.cuda`` (``self.device_module = getattr(torch, device_type,
torch.cuda)``) and torch's DeviceMesh parallelism (FSDP2, tensor/context parallel), which is not
how XLA shards. Also which mentions of a ``torch.cuda`` API are not uses of it: a script that
rebinds the attribute (``torch.cuda.is_bf16_supported = lambda: True``, so library code takes
the bf16 path on XLA) or deletes it calls nothing on CUDA."""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel

MESH_ADVICE = (
    "torch's DeviceMesh/DTensor parallelism (FSDP2, tensor/context parallel) is not how XLA "
    "shards: use torch_xla SPMD (xs.Mesh, xs.mark_sharding) or torch_xla's FSDP"
)
MESH_MANUAL = (
    "Shard with torch_xla SPMD (xs.Mesh, xs.mark_sharding) or torch_xla's FSDP instead of "
    "the DeviceMesh."
)
MESH_CALLS = frozenset(
    {
        "accelerate.ParallelismConfig",
        "accelerate.parallelism_config.ParallelismConfig",
        "accelerate.utils.ParallelismConfig",
        "torch.distributed.device_mesh.init_device_mesh",
        "torch.distributed.init_device_mesh",
    }
)


def function_name(call: ast.Call) -> str:
    func = call.func
    return (
        func.attr
        if isinstance(func, ast.Attribute)
        else func.id
        if isinstance(func, ast.Name)
        else ""
    )


def is_cuda_module(model: ScriptModel, value: ast.AST) -> bool:
    """``torch.cuda`` itself, or a value that falls back to it: a branch of ``a if c else
    torch.cuda`` / ``mod or torch.cuda``, the default of ``getattr(torch, name, torch.cuda)``.
    ``torch.cuda.is_available()`` or ``torch.cuda.FloatTensor`` inside a value is not."""
    if model.qualname(value) == "torch.cuda":
        return True
    if isinstance(value, ast.IfExp):
        return is_cuda_module(model, value.body) or is_cuda_module(model, value.orelse)
    if isinstance(value, ast.BoolOp):
        return any(is_cuda_module(model, v) for v in value.values)
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "getattr"
        and len(value.args) == 3
    ):
        return is_cuda_module(model, value.args[2])
    return False


def cuda_module_holders(model: ScriptModel) -> set[str]:
    """Names and attributes assigned a value that is (or falls back to) ``torch.cuda``:
    ``self.device_module = getattr(torch, device_type, torch.cuda)``."""
    holders = set()
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        if is_cuda_module(model, node.value):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    holders.add(t.id)
                elif isinstance(t, ast.Attribute):
                    holders.add(t.attr)
    return holders


# Builtins that take the module as an object to patch or inspect, not to call into.
_PATCHERS = frozenset({"setattr", "delattr", "hasattr"})


def patched_attributes(model: ScriptModel) -> dict[str, int]:
    """Qualified names (``torch.cuda.is_bf16_supported``) a module-level statement of the
    script rebinds, with the statement's line: from there on, and in every function (run
    after the module is loaded), a call runs the script's replacement, not CUDA's. A patch
    inside a function or branch may not run before the call, so it does not count."""
    patched: dict[str, int] = {}
    for stmt in model.tree.body:
        if not isinstance(stmt, ast.Assign | ast.AnnAssign):
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            q = model.qualname(t) if isinstance(t, ast.Attribute) else None
            if q is not None and stmt.value is not None:
                patched.setdefault(q, stmt.lineno)
    return patched


def is_not_a_use(model: ScriptModel, node: ast.Attribute, patched: dict[str, int]) -> bool:
    """Whether this mention of an API neither calls it nor hands it to code that may: the
    target of an assignment or ``del`` (Store/Del context), the object ``setattr`` /
    ``delattr`` / ``hasattr`` patch or inspect, or a use after the script's own module-level
    replacement of it (``patched_attributes``). A reference read as a value (an alias, a
    callback, an ``except`` clause) is still a use."""
    if isinstance(node.ctx, ast.Store | ast.Del):
        return True
    parent = model.parent(node)
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id in _PATCHERS
        and parent.args
        and parent.args[0] is node
    ):
        return True
    line = patched.get(model.qualname(node) or "")
    return line is not None and (node.lineno > line or model.enclosing_function(node) is not None)
