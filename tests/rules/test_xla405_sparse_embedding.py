"""XLA405: nn.Embedding(sparse=True) makes sparse gradients, which torch_xla lacks (measured on
2.9, PJRT CPU: NotImplementedError at the first backward); nn.EmbeddingBag(sparse=True) falls
back to the dense backward and is left alone (held-out 24, dlrm)."""

from tests.helpers import findings, fixed

CODE = """
import torch
import torch.nn as nn
emb = nn.Embedding(100, 8, sparse=True)
bag = nn.EmbeddingBag(100, 8, mode="sum", sparse=True)
dense = nn.Embedding(100, 8)
"""


def test_sparse_embedding_gets_a_review_fix_to_dense_gradients():
    (f,) = findings(CODE, "XLA405")
    assert f.span.start.line == 2 and "NotImplementedError" in f.message
    assert f.fix is not None and not f.fix.safe and "SparseAdam" in f.fix.review_reason
    assert "sparse=True" in fixed(CODE, "XLA405").split("\n")[2]  # not applied by `fix`
    out = fixed(CODE, "XLA405", unsafe=True)
    assert "nn.Embedding(100, 8, sparse=False)" in out
    assert 'nn.EmbeddingBag(100, 8, mode="sum", sparse=True)' in out
