"""The last batch is smaller (30 rows in batches of 8): one recompilation, caused where the
batch enters the device."""

import torch
import torch_xla

device = torch_xla.device()
weight = torch.ones(12, device=device)
data = torch.arange(360, dtype=torch.float32).reshape(30, 12)
for start in range(0, 30, 8):
    x = data[start : start + 8].to(device)  # CAUSE: the batch enters the device
    weight = weight + (x * weight).mean(0)
    torch_xla.sync()  # TRIGGER
print("done", flush=True)
