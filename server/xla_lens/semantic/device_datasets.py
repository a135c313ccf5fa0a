"""Whether a DataLoader reads a dataset whose samples already live on the device.

Small CUDA scripts keep their whole dataset on the GPU (``TensorDataset(x.to(device), y.to(
device))``) or move each sample in ``Dataset.__getitem__`` (``return img.to(self.device)``).
On CUDA that works with ``num_workers=0``. Once the device is the XLA device, those samples are
XLA tensors, and ``pl.MpDeviceLoader`` iterates the DataLoader on its loader thread: collating
XLA tensors there fails (``RuntimeError: Check failed: data()->tensor_data``, measured on
torch_xla 2.9 with PJRT CPU, both idioms). So XLA106's wrap of such a loader is not safe: the
dataset must hand out CPU tensors first, which is the author's change to make.

Evidence, read in this file only (a dataset from elsewhere is no evidence either way):
``TensorDataset`` of tensors placed on a device (the placement in its arguments or in the
one binding of a name it is given), or a dataset class of this file whose ``__getitem__``
places what it returns, or reads an attribute its ``__init__`` placed.
"""

from __future__ import annotations

import ast

from .loaders import DATALOADERS
from .model import ScriptModel, arg_or_keyword, const_str, method_name
from .node_helpers import dotted

TENSOR_DATASETS = frozenset(
    {"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"}
)
DEVICE_WORDS = ("dev", "gpu", "cuda", "rank")


def placed_dataset(model: ScriptModel, loader: ast.expr) -> tuple[ast.AST, ast.AST] | None:
    """(the dataset expression, the placement that puts its samples on a device) when the
    DataLoader ``loader`` names, built in this file, reads device-resident samples."""
    for call in _loader_calls(model, loader):
        dataset = arg_or_keyword(call, 0, "dataset")
        for value in _values(model, dataset):
            placement = _placement_in_dataset(model, value)
            if placement is not None:
                return dataset, placement  # type: ignore[return-value]
    return None


def yields_device_batches(model: ScriptModel, loader: ast.expr) -> bool:
    """Whether every tensor of every batch the DataLoader ``loader`` yields is placed on a
    device by its dataset: ``TensorDataset`` of placed tensors only, or a dataset class
    whose ``__getitem__`` returns placements only (``return x.to(self.device), y.to(...)``)."""
    calls = _loader_calls(model, loader)
    if not calls:
        return False
    for call in calls:
        values = _values(model, arg_or_keyword(call, 0, "dataset"))
        if not values or not all(_every_sample_placed(model, v) for v in values):
            return False
    return True


def _every_sample_placed(model: ScriptModel, value: ast.AST) -> bool:
    if not isinstance(value, ast.Call):
        return False
    if model.call_name(value) in TENSOR_DATASETS:
        return bool(value.args) and all(
            all(placement_call(t) is not None for t in _values(model, arg)) for arg in value.args
        )
    cls = _module_class(model, value.func.id) if isinstance(value.func, ast.Name) else None
    getitem = _method(cls, "__getitem__") if cls is not None else None
    if getitem is None:
        return False
    returns = [n.value for n in ast.walk(getitem) if isinstance(n, ast.Return)]
    return bool(returns) and all(_placed_elements(r) for r in returns)


def _placed_elements(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Tuple | ast.List):
        return bool(value.elts) and all(_placed_elements(e) for e in value.elts)
    return value is not None and placement_call(value) is not None


def _loader_calls(model: ScriptModel, loader: ast.expr) -> list[ast.Call]:
    return [
        v
        for v in _values(model, loader)
        if isinstance(v, ast.Call) and model.call_name(v) in DATALOADERS
    ]


def _values(model: ScriptModel, node: ast.AST | None) -> list[ast.AST]:
    """``node`` itself, or what its name is bound to in its function (or at module level)."""
    if node is None:
        return []
    if not isinstance(node, ast.Name):
        return [node]
    scope = model.enclosing_function(node)
    return [v for v in model.assigned_from(node.id) if model.enclosing_function(v) is scope] or [
        node
    ]


def _placement_in_dataset(model: ScriptModel, value: ast.AST) -> ast.AST | None:
    if not isinstance(value, ast.Call):
        return None
    if model.call_name(value) in TENSOR_DATASETS:
        for arg in value.args:
            for tensor in _values(model, arg):
                found = placement_call(tensor)
                if found is not None:
                    return found
        return None
    if isinstance(value.func, ast.Name):
        cls = _module_class(model, value.func.id)
        if cls is not None:
            return _placing_getitem(cls)
    return None


def _module_class(model: ScriptModel, name: str) -> ast.ClassDef | None:
    for stmt in model.tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return stmt
    return None


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


def _placing_getitem(cls: ast.ClassDef) -> ast.AST | None:
    getitem = _method(cls, "__getitem__")
    if getitem is None:
        return None
    for node in ast.walk(getitem):
        found = placement_call(node)
        if found is not None:
            return found
    init = _method(cls, "__init__")
    if init is None:
        return None
    placed: dict[str, ast.AST] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and (found := placement_call(node.value)) is not None:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and dotted(target.value) == "self":
                    placed[target.attr] = found
    for node in ast.walk(getitem):
        if isinstance(node, ast.Attribute) and dotted(node.value) == "self" and node.attr in placed:
            return placed[node.attr]
    return None


def placement_call(node: ast.AST) -> ast.AST | None:
    """``x.cuda()``, ``x.to(device)``, ``torch.randn(..., device=device)``: the call, when it
    names a device other than the CPU."""
    if not isinstance(node, ast.Call):
        return None
    name = method_name(node)
    if name == "cuda" and isinstance(node.func, ast.Attribute):
        return node
    device = None
    if name == "to" and isinstance(node.func, ast.Attribute):
        device = arg_or_keyword(node, 0, "device")
    if device is None:
        device = next((k.value for k in node.keywords if k.arg == "device"), None)
    if device is None:
        return None
    text = const_str(device)
    if text is not None:
        return node if not text.startswith("cpu") else None
    shown = ast.unparse(device).lower()
    if "cpu" in shown or "dtype" in shown or shown.startswith("torch.float"):
        return None
    return node if any(word in shown for word in DEVICE_WORDS) else None


__all__ = ["placed_dataset", "placement_call", "yields_device_batches"]
