"""XLA205, held-out 14 (modded-nanogpt): a per-device-type backend string with an NCCL part
(``"cuda:nccl,cpu:gloo"``) is a CUDA backend too; its ``device_id=`` goes with the fix
(measured on PJRT CPU: ``init_process_group("xla", device_id=torch_xla.device())`` raises
ValueError, "does not match the current compilation's accelerator support: cuda")."""

import pytest

from tests.helpers import findings, fixed, src

CODE = src("""
import torch
import torch.distributed as dist
import torch_xla

device = torch_xla.device()
dist.init_process_group(backend=BACKEND, device_id=device)
""")


@pytest.mark.parametrize("backend", ['"cuda:nccl,cpu:gloo"', '"cpu:gloo,cuda:nccl"', '"nccl"'])
def test_an_nccl_part_is_a_cuda_backend(backend):
    code = CODE.replace("BACKEND", backend)
    (f,) = findings(code, "XLA205")
    assert f.fix is not None
    out = fixed(code, "XLA205", unsafe=True)
    assert 'backend="xla"' in out and "device_id" not in out


def test_gloo_alone_is_left_alone():
    assert findings(CODE.replace("BACKEND", '"cpu:gloo"'), "XLA205") == []
