"""XLA405, held-out 15 (SwAV): apex imported only for LARC is no "replace apex" case — LARC
is plain PyTorch with no torch.optim equivalent; the advice keeps it and names its syncs.
Any other apex import keeps the replace advice."""

from tests.helpers import findings, src

LARC = src("""
import torch
from apex.parallel.LARC import LARC

model = torch.nn.Linear(8, 2).cuda()
opt = LARC(optimizer=torch.optim.SGD(model.parameters(), lr=0.1), trust_coefficient=0.001)
""")


def test_apex_for_larc_only_is_kept_with_its_syncs_named():
    (f,) = findings(LARC, "XLA405")
    assert "LARC is plain PyTorch" in f.message and "sync" in f.message
    assert f.manual is not None and f.manual.startswith("Keep LARC")


def test_apex_amp_still_gets_the_replace_advice():
    both = LARC.replace(
        "from apex.parallel.LARC import LARC",
        "from apex.parallel.LARC import LARC\nfrom apex import amp",
    )
    (f,) = findings(both, "XLA405")
    assert "CUDA-only library" in f.message
    assert f.manual is not None and f.manual.startswith("Replace apex")


def test_triton_is_a_cuda_only_library():
    code = src("""
    import torch
    import triton
    import triton.language as tl

    x = torch.randn(4).cuda()
    """)
    (f,) = findings(code, "XLA405")
    assert "Triton kernels" in f.message and f.manual is not None and "Pallas" in f.manual
