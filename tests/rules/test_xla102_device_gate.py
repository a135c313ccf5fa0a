"""XLA102: an autocast gated on the device being CUDA (held-out 137's distillation script:
``torch.cuda.amp.autocast(enabled=device.type == "cuda")``). Kept as written, the gate is False
on the converted device and the bf16 autocast the fix writes never turns on."""

from tests.helpers import findings, fixed

GATED = """
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 4, device=device)
    with torch.cuda.amp.autocast(enabled=args.amp and device.type == 'cuda'):
        loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_the_cuda_gate_of_the_autocast_reads_xla_after_conversion():
    (f,) = findings(GATED, "XLA102")
    assert f.fix is not None and "enabled=args.amp and device.type == 'xla'" in f.fix.title
    out = fixed(GATED)
    assert "device = torch_xla.device()" in out
    assert (
        "torch.autocast(\"xla\", dtype=torch.bfloat16, enabled=args.amp and device.type == 'xla')"
        in out
    )


def test_a_gate_that_compares_no_device_is_kept():
    plain = GATED.replace("args.amp and device.type == 'cuda'", "args.mode == 'cuda'")
    assert "enabled=args.mode == 'cuda')" in fixed(plain, "XLA102")
