"""XLA116 on a script already written for XLA (held-out 135's nanoGPT-TPU): its seed is the
author's choice for the XLA run, and a leftover ``if device_type == 'cuda':`` test (never true
there) is no CUDA placement to convert."""

from tests.helpers import findings

ON_XLA = """
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(rank):
    torch.manual_seed(1337 + rank)
    device = xm.xla_device()
    model = torch.nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    pin = DEVICE_TYPE == "cuda"
    for step in range(10):
        x = torch.randn(8, 4).to(device)
        loss = torch.nn.functional.dropout(model(x)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()


if __name__ == "__main__":
    xmp.spawn(_mp_fn)
"""


def test_a_synced_xla_script_whose_only_cuda_trace_is_a_test_gets_no_seed_finding():
    assert findings(ON_XLA, "XLA116") == []
    # A CUDA string handed on (not only compared) is a CUDA placement still to convert.
    placed = ON_XLA.replace('pin = DEVICE_TYPE == "cuda"', 'extra = torch.zeros(1, device="cuda")')
    assert len(findings(placed, "XLA116")) == 1
    # Without the sync and the XLA step it is not a finished XLA script either.
    unsynced = ON_XLA.replace(
        "        xm.optimizer_step(opt)\n        xm.mark_step()\n", "        opt.step()\n"
    )
    unsynced = unsynced.replace("    xmp.spawn(_mp_fn)", "    _mp_fn(0)")
    assert len(findings(unsynced, "XLA116")) == 1
