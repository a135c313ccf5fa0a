"""Torch calls that take a device but refuse the XLA device (torch 2.9 + torch_xla 2.9):
a device value that reaches one cannot simply become ``torch_xla.device()``.

``torch.Generator(device=...)`` is the one such use a conversion can rewrite with the value:
XLA has no generator of its own ("XLA device type not an accelerator"), but a CPU generator
works for draws on the XLA device (``torch.randn(..., device=xla, generator=cpu_gen)`` draws
on the CPU with it and moves the result). So the generator's device becomes ``"cpu"``; its
numbers differ from CUDA's, as every CUDA random stream does on XLA. That is unsafe only when
the script reads the generator's device or restores a saved state into it (a CUDA state does
not fit a CPU generator), which ``generator_reads`` finds.
"""

from __future__ import annotations

import ast

from .edits import Replace
from .line_refs import line_ref
from .model import ScriptModel, keyword

CPU_DEVICE = '"cpu"'

REFUSING_CALLS = {
    "torch.Generator": "torch.Generator raises for the XLA device (no XLA generator)",
    "torch.distributed.get_default_backend_for_device": (
        "get_default_backend_for_device has no backend for the XLA device (ValueError)"
    ),
    "torch.get_device_module": "torch.get_device_module has no module for the XLA device",
    "torch.Stream": "torch.Stream cannot be created for the XLA device",
}
# torch.accelerator knows CUDA/MPS/XPU, not XLA: ``synchronize(xla)`` and kin raise ValueError.
REFUSING_PREFIX = "torch.accelerator."
REFUSING_METHODS = {"pin_memory": "pin_memory() refuses the XLA device"}
# What of a generator changes when it becomes a CPU one: where it says it lives, and the
# states it accepts.
GENERATOR_READS = frozenset({"device", "set_state", "graphsafe_set_state", "clone_state"})
NO_GENERATOR_ON_XLA = ("exponential_", "geometric_", "cauchy_", "log_normal_")


def refusal(name: str | None, meth: str | None) -> str:
    """Why a call named ``name`` (or method ``meth``) refuses the XLA device; empty if not."""
    if name in REFUSING_CALLS:
        return REFUSING_CALLS[name]
    if name is not None and name.startswith(REFUSING_PREFIX):
        return f"{name} does not know the XLA device (ValueError)"
    return REFUSING_METHODS.get(meth or "", "")


def generator_call(model: ScriptModel, node: ast.AST) -> ast.Call | None:
    """The ``torch.Generator(...)`` call whose device argument ``node`` is, else None."""
    p = model.parent(node)
    if isinstance(p, ast.keyword) and p.arg == "device":
        p = model.parent(p)
    elif not (isinstance(p, ast.Call) and p.args and p.args[0] is node):
        return None
    if isinstance(p, ast.Call) and model.call_name(p) == "torch.Generator":
        return p
    return None


def device_argument(model: ScriptModel, call: ast.Call) -> ast.AST | None:
    """The device a ``torch.Generator(...)`` call is given (``device=`` or first argument)."""
    if model.call_name(call) != "torch.Generator":
        return None
    kw = keyword(call, "device")
    if kw is not None:
        return kw.value
    return call.args[0] if call.args else None


def generator_reads(model: ScriptModel, call: ast.Call) -> list[ast.AST]:
    """Reads of the generator's device or restores of a state into it (and draws that take
    no generator on XLA), for the name (or
    attribute) the generator is stored in, through ``.manual_seed(...)`` which returns it.
    A generator not stored (passed straight on) has none."""
    node: ast.AST = call
    parent = model.parent(node)
    while (
        isinstance(parent, ast.Attribute)
        and parent.attr == "manual_seed"
        and isinstance(model.parent(parent), ast.Call)
    ):
        node = model.parent(parent)
        parent = model.parent(node)
    if not (isinstance(parent, ast.Assign) and parent.value is node):
        return []
    keys = {_key(t) for t in parent.targets} - {None}
    reads: list[ast.AST] = [
        a
        for a in model.nodes_of(ast.Attribute)
        if isinstance(a, ast.Attribute) and a.attr in GENERATOR_READS and _key(a.value) in keys
    ]
    # ``x.exponential_(generator=g)`` raises on an XLA tensor whatever the generator (torch's
    # decomposition asserts there is none): the draw itself needs rewriting.
    for c in model.method_calls(*NO_GENERATOR_ON_XLA):
        kw = keyword(c, "generator")
        if kw is not None and _key(kw.value) in keys:
            reads.append(c.func)
    return reads


def _key(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def cpu_generator(model: ScriptModel, call: ast.Call, arg: ast.AST) -> tuple[Replace, str]:
    """The edit that makes ``call`` a CPU generator, and why it needs review (empty: safe)."""
    reads = generator_reads(model, call)
    reason = ""
    if reads:
        lines = ", ".join(f"line {line_ref(a.lineno)} `.{a.attr}`" for a in reads[:3])  # type: ignore[attr-defined]
        reason = (
            f"the generator becomes a CPU one and the script reads its device, restores a "
            f"state into it or draws with it where XLA takes no generator ({lines}): that "
            "now says cpu / needs a CPU state / raises (exponential_ & co.)"
        )
    return Replace(model.span(arg), CPU_DEVICE), reason
