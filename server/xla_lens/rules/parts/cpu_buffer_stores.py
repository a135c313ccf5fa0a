"""XLA401: a device value stored into a tensor the script made on the CPU.

    x_cont_enc = torch.empty(n1, n2, model.dim)            # no device=: a CPU tensor
    for i in range(model.num_continuous):
        x_cont_enc[:, i, :] = model.simple_MLP[i](x_cont[:, i])   # a device value
    x_cont_enc = x_cont_enc.to(device)

Each store copies the device value into host memory, so the pending graph runs and its result
comes back to the host, once per store, every step; the ``.to(device)`` after it copies the
whole buffer back (held-out 78, SAINT's ``embed_data_mask`` in augmentations.py: 3 steps ran
20 graph executions and 18 device-to-host transfers instead of about 3 and 0). Made on the
device (``device=x_cont.device``), the stores stay in the graph.
"""

from __future__ import annotations

import ast

from ...semantic.host_values import HostValues
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, keyword

STORE_MARK = "a store into a CPU tensor"
STORE_MANUAL = (
    "Make the tensor on the device the stored values live on (e.g. `torch.empty(..., "
    "device=x.device)`), or collect the values and `torch.stack` them: the stores then stay in "
    "the step's graph, with no copy to the host and back."
)
FACTORIES = frozenset(
    {"torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.rand", "torch.randn"}
)


def cpu_buffer_store(model: ScriptModel, values: HostValues, node: ast.AST) -> str | None:
    """What the store is, when ``node`` stores a value that may be a device tensor into a
    tensor made on the CPU by the binding that reaches it in the same function."""
    if not (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(target := node.targets[0], ast.Subscript)
        and isinstance(target.value, ast.Name)
    ):
        return None
    if values.is_host(node.value) or isinstance(node.value, ast.Constant):
        return None
    made = _reaching_factory(model, node, target.value.id)
    if made is None:
        return None
    # A sibling module's line is a plain number: this file's edits do not move it.
    line = str(made.lineno) if model.path == "<sibling>" else line_ref(made.lineno)
    return f"`{model.segment(target)[:40]} = ...` ({STORE_MARK} made by {model.call_name(made)} on line {line})"


def _reaching_factory(model: ScriptModel, store: ast.Assign, name: str) -> ast.Call | None:
    """The ``name = torch.empty(...)`` (no device) last bound before ``store`` in the same
    function and the same or an enclosing block, with no other binding of ``name`` between."""
    scope = model.enclosing_function(store)
    last: ast.Assign | None = None
    for node in model.assignments.get(name, ()):  # the index, not a walk per store
        if (
            isinstance(node, ast.Assign)
            and node.lineno < store.lineno
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            and model.enclosing_function(node) is scope
            and (last is None or node.lineno > last.lineno)
        ):
            last = node
    if last is None:
        return None
    value = last.value
    if not (isinstance(value, ast.Call) and model.call_name(value) in FACTORIES):
        return None
    if keyword(value, "device") is not None or keyword(value, "out") is not None:
        return None
    # The binding runs before the store: it is in a block that holds the store.
    parent = model.parent(last)
    if parent is None or not any(a is parent for a in model.ancestors(store)):
        return None
    return value
