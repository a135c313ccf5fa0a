"""The "availability flag + CUDA tensor type" idiom of older GAN scripts, proven by running
(protocol: README.md).

With the review fixes of XLA101 accepted (the flag, the `.cuda()` moves it guards and the
tensor-type aliases), the conversion trains on the XLA device and matches the CPU original.
With the safe fixes only, the program still means what it meant (it stays on the CPU) and
the review findings are left for the user.
"""

from __future__ import annotations

import pytest
from xla_lens.engine import analyze

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla

FIXTURE = FIXTURES / "gan_flag_tensor_type.py"


def test_review_fixes_together_train_the_gan_on_xla():
    result = prove(FIXTURE, steps=3, accept_review=("XLA101",))
    assert_proven(result)
    src = result.converted_source
    assert "torch.cuda" not in src and "generator.cuda()" not in src
    assert "cuda = True\n" in src
    assert "FloatTensor = torch.FloatTensor\n" in src
    assert "LongTensor = torch.LongTensor\n" in src
    # Both legacy constructor meanings (sizes, data) keep the type and land on the device.
    assert "valid = FloatTensor(n, 1).to(torch_xla.device()).fill_(1.0)" in src
    assert "z = FloatTensor(rng.normal(0, 1, (n, LATENT))).to(torch_xla.device())" in src
    # A cast keeps its dtype: the double points become float32 on the device.
    assert "real = real.to(torch_xla.device(), torch.float32)" in src
    assert "labels = labels.to(torch_xla.device(), torch.int64)" in src
    assert "XLA101" not in result.remaining and "XLA405" not in result.remaining


def test_safe_conversion_leaves_the_idiom_for_review_and_keeps_the_program():
    review = [
        f
        for f in analyze(FIXTURE.read_text()).findings
        if f.code in {"XLA101", "XLA405"} and (f.fix is None or not f.fix.safe)
    ]
    # The flag, the three guarded .cuda() moves and the two aliases: all for review.
    assert len(review) == 6 and all(f.fix is not None for f in review)
    assert all(f.fix.review_reason for f in review)
    result = prove(FIXTURE, steps=3)
    conv, orig = result.converted, result.original
    assert result.remaining.count("XLA101") == 6, result.describe()
    assert "cuda = True if torch.cuda.is_available() else False" in result.converted_source
    assert conv.returncode == 0 and orig is not None and orig.returncode == 0, result.describe()
    assert conv.param_device == "cpu", result.describe()
    assert conv.losses == pytest.approx(orig.losses, rel=1e-5), result.describe()
