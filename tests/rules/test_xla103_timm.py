"""XLA103 on timm's loss scalers (held-out 8 D9: DeiT's ``NativeScaler()``): advice, no fix."""

from __future__ import annotations

from tests.helpers import findings

CODE = """
import torch
from timm.utils import NativeScaler

model = torch.nn.Linear(4, 2)
opt = torch.optim.AdamW(model.parameters())
loss_scaler = NativeScaler()
for x in [torch.randn(3, 4)]:
    with torch.autocast("cuda"):
        loss = model(x).sum()
    opt.zero_grad()
    loss_scaler(loss, opt, clip_grad=1.0, parameters=model.parameters())
"""


def test_timms_native_scaler_is_reported_with_the_plain_update_to_write():
    (f,) = findings(CODE, "XLA103")
    assert f.fix is None and "NativeScaler" in f.message and "still scales" in f.message
    assert "loss.backward()" in f.manual and "clip_grad_norm_" in f.manual
    assert "NativeScaler()" in CODE.splitlines()[f.span.start.line + 1]


def test_apex_scaler_is_a_warning():
    (f,) = findings(CODE.replace("NativeScaler", "ApexScaler"), "XLA103")
    assert "apex" in f.message


def test_a_local_class_named_native_scaler_is_not_timms():
    code = CODE.replace("from timm.utils import NativeScaler\n", "").replace(
        "import torch\n", "import torch\n\n\nclass NativeScaler:\n    pass\n", 1
    )
    assert findings(code, "XLA103") == []
