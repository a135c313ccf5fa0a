"""XLA405: ``nn.Embedding(..., sparse=True)``: its backward makes a sparse gradient, and torch_xla
has no sparse tensors (torch_xla 2.9, PJRT CPU: the first ``backward()`` raises
NotImplementedError, "Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors' with
arguments from the 'SparseXLA' backend"). ``nn.EmbeddingBag(sparse=True)`` falls back to the
dense backward with a warning, so it is left alone (dlrm, held-out 24).

The fix, ``sparse=False``, is offered for review: with dense gradients an optimizer that keeps
state (momentum, Adam's moments, weight decay) updates every row each step, not only the rows
looked up, so training changes; ``torch.optim.SparseAdam`` rejects dense gradients and must
become Adam. Plain SGD and Adagrad give the same values.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, keyword
from ..base import Finding, Fix, SetKeyword, Severity

EMBEDDINGS = frozenset({"torch.nn.Embedding", "torch.nn.Embedding.from_pretrained"})
REASON = (
    "with dense gradients an optimizer that keeps state (momentum, Adam's moments, weight "
    "decay) updates every row each step, not only the rows looked up, so training changes; "
    "torch.optim.SparseAdam rejects dense gradients (use Adam); plain SGD and Adagrad give "
    "the same values"
)


def sparse_embedding_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in model.calls:
        if model.call_name(call) not in EMBEDDINGS:
            continue
        kw = keyword(call, "sparse")
        if kw is None or not (isinstance(kw.value, ast.Constant) and kw.value.value is True):
            continue
        yield Finding(
            code,
            "nn.Embedding(sparse=True) makes sparse gradients, which torch_xla does not have: "
            "the first backward() on the XLA device raises NotImplementedError (SparseXLA); "
            f"use sparse=False (the fix needs review: {REASON})",
            model.span(kw),
            Severity.WARNING,
            fix=Fix(
                "Use dense gradients: sparse=False",
                (SetKeyword(model.span(call), "sparse", "False"),),
                safe=False,
                review_reason=REASON,
            ),
        )
