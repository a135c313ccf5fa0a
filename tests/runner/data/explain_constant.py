"""A Python int slice offset is baked into the graph as a constant: a new graph every step."""

import torch
import torch_xla

device = torch_xla.device()
acc = torch.zeros(4, device=device)
seq = torch.arange(160, dtype=torch.float32, device=device).reshape(40, 4)
for step in range(4):
    acc = acc + seq[step * 2 : step * 2 + 8].sum(0)  # CAUSE: the offset is a Python int
    torch_xla.sync()  # TRIGGER
print("done", flush=True)
