"""XLA402: an evaluation DataLoader that keeps its short last batch (held-out 8, deit's
``data_loader_val = DataLoader(..., drop_last=False)``).

The short last batch is a second shape for the evaluation graph: XLA compiles it once per run
(later evaluations take it from the cache), so the cost is one compile, not one per epoch.
There is no safe fix: dropping evaluation samples changes the metric. Reported as
information, with advice, and only where the script wrote ``drop_last=False`` itself (a loader
without the keyword is the default, and most evaluation loaders are: reporting each would be
noise for a one-off compile).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence

from ...semantic.model import ScriptModel, keyword
from ..base import Finding, Severity

CODE = "XLA402"
DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
EVAL_WORD = re.compile(r"(^|_)(val|valid|validation|eval|test)(_|$)", re.IGNORECASE)
MANUAL_EVAL = (
    "Leave it if one extra compile per run is acceptable. To avoid it, pad the evaluation set "
    "to a multiple of the batch size and leave the padded samples out of the metric (e.g. a "
    "per-sample weight of 0). Set drop_last=True only if the metric may skip up to "
    "batch_size - 1 samples: it changes what is measured."
)


def _named_for_eval(model: ScriptModel, call: ast.Call) -> bool:
    """``data_loader_val = DataLoader(dataset_val, ...)``: the target or the dataset says so."""
    names: list[str] = []
    parent = model.parent(call)
    if isinstance(parent, ast.Assign):
        names += [t.id for t in parent.targets if isinstance(t, ast.Name)]
    if call.args and isinstance(call.args[0], ast.Name):
        names.append(call.args[0].id)
    return any(EVAL_WORD.search(n) for n in names)


def single_sample_batches(call: ast.Call) -> bool:
    """``DataLoader(..., batch_size=1)`` (the first argument after the dataset, or the
    keyword): every batch holds one sample, so there is no smaller last batch (KAIR's test
    loader, held-out 31)."""
    kw = keyword(call, "batch_size")
    size = kw.value if kw is not None else (call.args[1] if len(call.args) > 1 else None)
    return isinstance(size, ast.Constant) and size.value == 1 and size.value is not True


def eval_loader_findings(model: ScriptModel, training: Sequence[ast.Call]) -> Iterator[Finding]:
    """DataLoader calls with an explicit ``drop_last=False`` that no training loop iterates,
    in a script that trains (the loaders ``training`` lists are XLA402's own)."""
    train_ids = {id(c) for c in training}
    trains_here = bool(model.training_loops)
    for node in model.calls:
        if id(node) in train_ids:
            continue
        if model.call_name(node) not in DATALOADERS:
            continue
        if not trains_here and not _named_for_eval(model, node):
            continue  # the loop is elsewhere (deit's engine.py): only a loader named for eval
        kw = keyword(node, "drop_last")
        if kw is None or not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
            continue
        if keyword(node, "batch_sampler") is not None:
            continue  # batch_sampler decides the batches; drop_last does not apply
        if single_sample_batches(node):
            continue
        yield Finding(
            CODE,
            "this DataLoader (not iterated by a training loop: evaluation?) keeps its smaller "
            "last batch with drop_last=False: XLA compiles one extra graph for that shape, "
            "once per run (later passes take it from the cache); no fix, since dropping "
            "evaluation samples changes the metric",
            model.span(kw.value),
            Severity.INFORMATION,
            manual=MANUAL_EVAL,
        )
