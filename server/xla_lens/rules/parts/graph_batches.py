"""XLA402's graph batches: PyTorch Geometric's ``DataLoader`` collates a batch of graphs into
one big disjoint graph, whose node and edge counts are the sums over the graphs drawn. They
differ almost every step (ogb's molecule property prediction, held-out 101), so every tensor
of the forward has a new shape and XLA compiles the step again and again. Said once per loader
of a script that places its work on a device (one that trains on the CPU compiles nothing)."""

from __future__ import annotations

from collections.abc import Iterator

from ...semantic.device_intent import places_on_a_device
from ...semantic.model import ScriptModel
from ..base import Finding, Severity

GRAPH_LOADERS = frozenset(
    {
        "torch_geometric.loader.DataLoader",
        "torch_geometric.data.DataLoader",
        "torch_geometric.loader.DataListLoader",
    }
)
MESSAGE = (
    "PyTorch Geometric's `{name}` joins each batch's graphs into one graph whose node and edge "
    "counts are their sums: they change almost every step, so every tensor of the forward has "
    "a new shape and XLA compiles the step again for each one"
)
MANUAL = (
    "Give every batch the same shape: pad each graph to fixed node and edge counts "
    "(PyG 2.3+: torch_geometric.transforms.Pad(max_num_nodes, max_num_edges, "
    "add_pad_mask=True)) so a batch of B graphs is always B times that size, or bucket the "
    "graphs by size and pad each bucket; the pad masks keep the padding out of the loss and "
    "the pooling."
)


def graph_batch_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    if not places_on_a_device(model):
        return
    for call in model.calls_to(*GRAPH_LOADERS):
        name = model.segment(call.func)
        yield Finding(
            code,
            MESSAGE.format(name=name),
            model.span(call),
            Severity.WARNING,
            manual=MANUAL,
        )
