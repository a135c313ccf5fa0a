"""XLA403 on pinned tensors outside a DataLoader (held-out 63's modded-nanogpt:
``torch.empty(..., pin_memory=True)``): pinning needs a CUDA driver, so on an XLA host it
raises (measured on torch 2.9: "Found no NVIDIA driver"). The keyword goes (safe: pinning
changes no value); ``.pin_memory()`` returns a copy, so dropping it waits for review."""

import pytest
import torch

from tests.helpers import findings, fixed


def test_a_pinned_factory_loses_its_keyword_and_a_pin_copy_waits_for_review():
    code = """
    import torch
    buf = torch.empty(4, 8, dtype=torch.float32, pin_memory=True)
    x = torch.zeros(3).pin_memory()
    """
    found = {f.span.start.line: f for f in findings(code, "XLA403")}
    assert found[1].fix.safe and "Found no NVIDIA driver" in found[1].message
    assert not found[2].fix.safe and "copy" in found[2].fix.review_reason
    out = fixed(code, "XLA403")
    assert "torch.empty(4, 8, dtype=torch.float32)" in out and ".pin_memory()" in out


def test_the_cuda_paths_own_pinning_and_a_batch_pin_protocol_are_left_alone():
    code = """
    import torch
    def get_batch(x, device, device_type):
        if device_type == "cuda":
            return x.pin_memory().to(device, non_blocking=True)
        return x.to(device)

    class Batch:
        def pin_memory(self):
            self.inp = self.inp.pin_memory()
            return self
    """
    assert [f for f in findings(code, "XLA403") if "pinned" in f.message] == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a host without CUDA")
def test_pinning_raises_without_a_cuda_driver():
    with pytest.raises(RuntimeError, match="NVIDIA driver"):
        torch.empty(2, pin_memory=True)
