"""XLA402: a DataLoader whose dataset length is a multiple of its batch size by construction
(held-out 49's and 48's already-XLA controls: ``TensorDataset(torch.randint(0, v, (num_batches *
batch_size, seq)))`` loaded with ``batch_size=batch_size``): there is no short last batch, so
no second graph and nothing for ``drop_last`` to drop."""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, arg_or_keyword, keyword

SIZED = frozenset(
    {"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty", "torch.full"}
)
DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})


def _only_value(model: ScriptModel, node: ast.expr) -> ast.expr:
    """A name bound once in the script: its value; anything else as it is."""
    if isinstance(node, ast.Name):
        values = model.assigned_from(node.id)
        if len(values) == 1:
            return values[0]
    return node


def _first_dim(model: ScriptModel, tensor: ast.expr) -> ast.expr | None:
    call = _only_value(model, tensor)
    if not isinstance(call, ast.Call):
        return None
    name = model.call_name(call)
    size: ast.expr | None = None
    if name in SIZED and call.args:
        size = call.args[0]
    elif name == "torch.randint":
        size = keyword(call, "size").value if keyword(call, "size") else call.args[-1]
    elif name == "torch.arange" and len(call.args) == 1:
        return call.args[0]
    if isinstance(size, ast.Tuple | ast.List) and size.elts:
        return size.elts[0]
    return size if name in SIZED and size is not None else None


def batches_divide_evenly(model: ScriptModel, loader: ast.Call) -> bool:
    dataset = arg_or_keyword(loader, 0, "dataset")
    batch = arg_or_keyword(loader, 1, "batch_size")
    if dataset is None or batch is None:
        return False
    built = _only_value(model, dataset)
    if not (isinstance(built, ast.Call) and model.call_name(built) in DATASETS and built.args):
        return False
    rows = _first_dim(model, built.args[0])
    if rows is None:
        return False
    if isinstance(rows, ast.Constant) and isinstance(batch, ast.Constant):
        return (
            isinstance(rows.value, int)
            and isinstance(batch.value, int)
            and batch.value > 0
            and rows.value % batch.value == 0
        )
    if isinstance(rows, ast.BinOp) and isinstance(rows.op, ast.Mult):
        # The same name means the same value only within one function.
        scope = model.enclosing_function(loader)
        if model.enclosing_function(rows) is not scope:
            return False
        shown = model.segment(batch)
        return shown in (model.segment(rows.left), model.segment(rows.right))
    return False
