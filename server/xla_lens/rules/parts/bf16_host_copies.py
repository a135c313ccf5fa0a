"""XLA102's host copies of a half-precision autocast's outputs. CUDA's autocast computes in
float16, the XLA fix in bfloat16; a value computed under the autocast and copied to the host
(``audio_model(x).to('cpu')``, ``.cpu()``, ``.numpy()``, ``np.mean(...)``) is then a bfloat16
tensor, which NumPy cannot take: ``TypeError: Got unsupported ScalarType BFloat16`` where the
float16 one converted (whisper-at's ``validate``, held-out 103: its predictions go from the
host copy to ``np.argmax``). Reading one number (``.item()``, ``.tolist()``) works in either
type. Pure analysis: the reason makes the fix one to review."""

from __future__ import annotations

import ast

from ...semantic.host_calls import names_cpu
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, method_name, receiver

NUMBER_READS = frozenset({"item", "tolist"})


def _outputs(body: list[ast.stmt]) -> set[str]:
    return {
        t.id
        for stmt in body
        for node in ast.walk(stmt)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for t in ast.walk(target)
        if isinstance(t, ast.Name)
    }


def _root(node: ast.AST) -> ast.AST:
    while True:
        if isinstance(node, ast.Call) and receiver(node) is not None:
            node = receiver(node)  # type: ignore[assignment]
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            return node


def _host_copy(model: ScriptModel, call: ast.Call) -> bool:
    name = method_name(call)
    if name == "numpy":
        return True
    moved = name == "cpu" or (
        name == "to"
        and any(
            names_cpu(model, a)
            for a in [*call.args[:1], *(k.value for k in call.keywords if k.arg == "device")]
        )
    )
    if not moved or not _hands_values_to_numpy(model):
        # A host copy no NumPy code of this file can take stays a torch tensor, which works
        # in bfloat16 as in float16 (held-out 150's TabPFN: ``losses.mean(1).cpu()`` summed
        # into a torch accumulator, in a file that never imports NumPy).
        return False
    # ``loss.cpu().item()``: one number, read the same from a bfloat16 tensor.
    parent = model.parent(call)
    outer = model.parent(parent) if isinstance(parent, ast.Attribute) else None
    return not (isinstance(outer, ast.Call) and method_name(outer) in NUMBER_READS)


def _hands_values_to_numpy(model: ScriptModel) -> bool:
    """The file converts tensors for NumPy somewhere: a ``.numpy()`` call or a NumPy call."""

    def build() -> bool:
        return any(
            method_name(c) == "numpy" or (model.call_name(c) or "").startswith("numpy.")
            for c in model.calls
        )

    return model.memo(_hands_values_to_numpy, build)


def bf16_host_copy_reason(model: ScriptModel, autocast: ast.Call) -> str | None:
    """Why the bfloat16 fix of ``autocast`` (a ``with`` item) needs review, or None."""
    with_node = model.parent(model.parent(autocast))
    if not isinstance(with_node, ast.With):
        return None
    outputs = _outputs(with_node.body)
    if not outputs:
        return None
    frame = model.enclosing_function(with_node) or model.tree
    start = (with_node.lineno, with_node.col_offset)
    for node in ast.walk(frame):
        if not isinstance(node, ast.Call) or (node.lineno, node.col_offset) < start:
            continue
        root = _root(node)
        copied = isinstance(root, ast.Name) and root.id in outputs and _host_copy(model, node)
        qualname = model.call_name(node) or ""
        if not copied and qualname.startswith("numpy."):
            copied = any(isinstance(a, ast.Name) and a.id in outputs for a in node.args)
            root = next((a for a in node.args if isinstance(a, ast.Name) and a.id in outputs), root)
        if copied:
            return (
                f"`{root.id}`, computed under this autocast, goes to the host on line "  # type: ignore[attr-defined]
                f"{line_ref(node.lineno)} (`{model.segment(node)[:50]}`): in bfloat16 (the fix's "
                "type; CUDA's autocast computed float16) NumPy cannot take it (TypeError: Got "
                "unsupported ScalarType BFloat16); add `.float()` before the copy"
            )
    return None
