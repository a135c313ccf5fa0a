"""XLA114, held-out 8 H11 (hlb-CIFAR10): fp16 by hand, ``net.half()`` and ``.half()`` batches,
are float16 on XLA too. Reported; the rewrite to ``.to(torch.bfloat16)`` is for review."""

from tests.helpers import findings, fixed, src

CODE = """
import torch
import torch.nn.functional as F

images = images.half()
targets = F.one_hot(labels).half()
net = Net().to(device)
net.half()
x = x.to(torch.float16)
y = y.to(device, torch.float16)
z = z.to(torch.float32)
if p.dtype in (torch.half, torch.float):
    pass
"""


def test_half_casts_of_model_and_batches_are_found():
    found = findings(CODE, "XLA114")
    assert [f.span.start.line for f in found] == [3, 4, 6, 7, 8]
    assert all("bfloat16" in f.message for f in found)
    assert all(f.fix is not None and not f.fix.safe for f in found)
    assert all("dtype" in f.fix.review_reason for f in found)


def test_half_casts_are_rewritten_for_review_only():
    assert fixed(CODE, "XLA114") == src(CODE)
    out = fixed(CODE, "XLA114", unsafe=True)
    assert "images = images.to(torch.bfloat16)" in out
    assert "targets = F.one_hot(labels).to(torch.bfloat16)" in out
    assert "net.to(torch.bfloat16)" in out
    assert "x = x.to(torch.bfloat16)" in out
    assert "y = y.to(device, torch.bfloat16)" in out
    # A dtype comparison is not a cast: left as written.
    assert "if p.dtype in (torch.half, torch.float):" in out


def test_half_with_arguments_or_without_torch_is_left_alone():
    code = """
    import numpy as np
    a = arr.half()
    """
    assert findings(code, "XLA114") == []
    code = """
    import torch
    t = t.half(memory_format=torch.preserve_format)
    """
    assert len(findings(code, "XLA114")) == 1
