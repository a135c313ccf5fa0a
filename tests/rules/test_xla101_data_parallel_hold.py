"""XLA101's device fixes wait for review while an ``nn.DataParallel`` wrap stays (its XLA110
removal needs review). Glow (held-out 121) wraps the model in ``nn.DataParallel`` and moves it to
a ``cuda``-or-``cpu`` picker: the safe picker fix put the model on XLA under a wrap that, where
torch sees a GPU (the machine "Run on GPU (XLA)" uses), scatters onto cuda:0 and raises."""

import pytest
import torch

from tests.helpers import findings, fixed, src

GLOW = """
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(model, loader):
    optimizer = torch.optim.Adam(model.parameters())
    for x in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    model = nn.DataParallel(nn.Linear(2, 2))
    model = model.to(device)
    print(model.module.weight.shape)
    train(model, [torch.ones(1, 2)])
"""


def test_the_device_fix_waits_while_the_wrap_stays():
    (wrap,) = [f for f in findings(GLOW, "XLA110") if f.message.startswith("nn.DataParallel")]
    assert wrap.fix is None or not wrap.fix.safe
    (device,) = findings(GLOW, "XLA101")
    assert device.fix is not None and not device.fix.safe
    assert device.fix.review_reason.startswith("nn.DataParallel (line 16) stays")
    assert 'torch.device("cuda" if torch.cuda.is_available() else "cpu")' in fixed(GLOW)


def test_without_the_wrap_the_device_fix_stays_safe():
    code = GLOW.replace("nn.DataParallel(nn.Linear(2, 2))", "nn.Linear(2, 2)").replace(
        "model.module.weight", "model.weight"
    )
    (device,) = findings(code, "XLA101")
    assert device.fix is not None and device.fix.safe


def test_a_wrap_on_the_cuda_side_of_the_scripts_own_switch_holds_nothing():
    code = src("""
    import torch
    import torch_xla
    from torch import nn

    use_xla = True
    device = torch_xla.device() if use_xla else torch.device("cuda")
    model = nn.Linear(2, 2)
    if not use_xla:
        model = nn.DataParallel(model)
    model = model.to(device)
    batch = torch.ones(1, 2).to("cuda:0")
    """)
    assert not findings(code, "XLA110")  # the CUDA side of the script's own switch
    (device,) = findings(code, "XLA101")
    assert device.span.start.line == 10 and device.fix is not None and device.fix.safe


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU visible to torch")
def test_where_torch_sees_a_gpu_the_wrap_refuses_a_model_off_cuda():
    # What the reason claims: torch's own check, on a model that is not on cuda:0.
    model = torch.nn.DataParallel(torch.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="module must have its parameters and buffers on device"):
        model(torch.ones(1, 2))


def test_a_wrap_only_several_gpus_run_holds_nothing():
    # A one-GPU host skips it as the original did; an XLA host has no CUDA device to count.
    code = GLOW.replace(
        "    model = nn.DataParallel(nn.Linear(2, 2))\n",
        "    model = nn.Linear(2, 2)\n    if torch.cuda.device_count() > 1:\n"
        "        model = nn.DataParallel(model)\n",
    ).replace("model.module.weight", "model.weight")
    (device,) = findings(code, "XLA101")
    assert device.fix is not None and device.fix.safe
