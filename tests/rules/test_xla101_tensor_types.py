"""XLA101: the "availability flag + CUDA tensor type" idiom (older GAN/CV scripts)."""

from tests.helpers import findings, fixed, src

GAN = """
import numpy as np
import torch
cuda = True if torch.cuda.is_available() else False
G = torch.nn.Linear(4, 1)
if cuda:
    G.cuda()
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
LongTensor = torch.cuda.LongTensor if cuda else torch.LongTensor
z = Tensor(np.random.random((8, 4)))
ones = Tensor(8, 1).fill_(1.0)
real = (imgs + 1).type(Tensor)
labels = lab.type(LongTensor)
"""


def _by_line(code: str) -> dict[int, object]:
    return {f.span.start.line + 1: f for f in findings(code, "XLA101")}


def test_alias_and_flag_get_review_fixes_with_reasons():
    found = _by_line(GAN)
    flag, alias = found[3], found[7]
    for f in (flag, alias, found[8], found[6]):
        assert f.fix is not None and not f.fix.safe and f.fix.review_reason
    assert "line 6, 7, 8" in flag.fix.review_reason
    assert "fails on a host without it" in flag.fix.review_reason
    assert "line 9, 10, 11" in alias.fix.review_reason
    # Reported once, by XLA101 with the fix, not again by XLA405 without one.
    assert findings(GAN, "XLA405") == []


def test_review_fixes_rewrite_every_use_keeping_dtype_and_both_constructor_meanings():
    out = fixed(GAN, "XLA101", unsafe=True)
    assert out == src(
        """
        import numpy as np
        import torch
        import torch_xla
        cuda = True
        G = torch.nn.Linear(4, 1)
        if cuda:
            G.to(torch_xla.device())
        Tensor = torch.FloatTensor
        LongTensor = torch.LongTensor
        z = Tensor(np.random.random((8, 4))).to(torch_xla.device())
        ones = Tensor(8, 1).to(torch_xla.device()).fill_(1.0)
        real = (imgs + 1).to(torch_xla.device(), torch.float32)
        labels = lab.to(torch_xla.device(), torch.int64)
        """
    )
    # Safe-only conversion touches none of it.
    assert fixed(GAN, "XLA101") == src(GAN)


def test_a_plain_cuda_type_and_the_device_variable():
    code = """
    import torch
    import torch_xla
    device = torch_xla.device()
    HalfT = torch.cuda.HalfTensor
    x = HalfT(2, 2)
    y = w.type(HalfT)
    """
    out = fixed(code, "XLA101", unsafe=True)
    assert "HalfT = torch.HalfTensor\n" in out
    assert "x = HalfT(2, 2).to(device)\n" in out
    assert "y = w.to(device, torch.float16)\n" in out


def test_any_other_use_of_the_alias_means_no_fix():
    for extra in (
        "isinstance(z, Tensor)",
        "torch.set_default_tensor_type(Tensor)",
        "Tensor = torch.FloatTensor",
        "u = Tensor(3, device='cpu')",
        "def f(Tensor):\n    return Tensor(2)",
    ):
        code = GAN + extra + "\n"
        found = _by_line(code)
        assert 7 not in found or found[7].fix is None, extra
        # Left to XLA405 (no fix), and the flag that chooses it gets no fix either.
        assert any(f.span.start.line + 1 == 7 for f in findings(code, "XLA405")), extra
        assert found[3].fix is None and "no automatic fix" in found[3].manual, extra


def test_flag_with_other_uses_has_no_fix():
    for extra in ("print('gpu:', cuda)", "if cuda:\n    torch.backends.cudnn.benchmark = True"):
        found = _by_line(GAN + extra + "\n")
        assert found[3].fix is None and found[3].manual[0].isupper(), extra
        # The alias fix does not depend on the flag's.
        assert found[7].fix is not None, extra


def test_unused_alias_is_left_to_xla405():
    code = """
    import torch
    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    """
    assert [f for f in findings(code, "XLA101") if f.fix is not None] == []
    assert len(findings(code, "XLA405")) == 1


def test_a_device_picker_on_the_flag_is_rewritten_whole_so_the_flag_may_become_true():
    code = """
    import numpy as np
    import torch
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    G = torch.nn.Linear(4, 1)
    if cuda:
        G.cuda()
    FloatTensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    z = FloatTensor(np.zeros((2, 4)))
    """
    flag = _by_line(code)[3]
    assert flag.fix is not None and "line 4, 7, 8" in flag.fix.review_reason
    out = fixed(code, "XLA101", unsafe=True)
    assert "cuda = True\ndevice = torch_xla.device()\n" in out
    assert "    G.to(device)\n" in out
    assert "z = FloatTensor(np.zeros((2, 4))).to(device)\n" in out
