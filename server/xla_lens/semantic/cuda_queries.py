"""What CUDA queries do on a host without CUDA (an XLA host): some answer zero, some raise
("Found no NVIDIA driver", measured on torch 2.9)."""

from __future__ import annotations

ZERO_ON_XLA = frozenset({"torch.cuda.device_count", "torch.accelerator.device_count"})
RAISE_ON_XLA = frozenset(
    {
        "torch.cuda.current_device",
        "torch.cuda.get_device_name",
        "torch.cuda.get_device_properties",
        "torch.cuda.get_device_capability",
        "torch.cuda.set_device",
        "torch.accelerator.current_device_index",
        "torch.accelerator.set_device_index",
        "torch.accelerator.set_device_idx",
    }
)
