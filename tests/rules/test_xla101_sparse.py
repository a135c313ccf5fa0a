"""XLA101: a sparse tensor cannot be moved to the XLA device (NotImplementedError, measured
on torch_xla 2.9); the move's fix densifies it first, for review (held-out 16, pygcn)."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import findings, fixed, src


def test_a_sparse_tensor_move_densifies_for_review():
    code = """
    import torch
    i = torch.tensor([[0, 1], [1, 0]])
    adj = torch.sparse_coo_tensor(i, torch.tensor([1.0, 1.0]), (2, 2))
    adj = adj.cuda()
    x = torch.randn(2, 3).cuda()
    """
    by_line = {f.span.start.line + 1: f for f in findings(code, "XLA101")}
    assert not by_line[4].fix.safe and "sparse tensor" in by_line[4].fix.review_reason
    assert by_line[5].fix.safe
    assert "adj = adj.to_dense().to(torch_xla.device())" in fixed(code, "XLA101", unsafe=True)


@pytest.fixture
def _siblings(fresh_workspace_caches):
    yield


def test_a_sparse_tensor_unpacked_from_a_helper_in_a_sibling(tmp_path: Path, _siblings) -> None:
    (tmp_path / "utils.py").write_text(
        src(
            """
            import torch
            def to_torch_sparse(mx):
                return torch.sparse_coo_tensor(mx[0], mx[1], (2, 2))
            def load_data():
                adj = to_torch_sparse(([[0, 1], [1, 0]], [1.0, 1.0]))
                features = torch.randn(2, 3)
                return adj, features
            """
        ),
        encoding="utf-8",
    )
    script = tmp_path / "train.py"
    script.write_text(
        src(
            """
            from utils import load_data
            adj, features = load_data()
            adj = adj.cuda()
            features = features.cuda()
            """
        ),
        encoding="utf-8",
    )
    found = [f for f in analyze(script.read_text(), str(script)).findings if f.code == "XLA101"]
    by_line = {f.span.start.line + 1: f for f in found}
    assert not by_line[3].fix.safe and by_line[4].fix.safe
