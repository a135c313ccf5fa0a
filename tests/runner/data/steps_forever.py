"""An endless training-style loop: only --steps ends it."""

import torch
import torch_xla

device = torch_xla.device()
w = torch.zeros(4, device=device)
while True:
    w = w + 1
    torch_xla.sync()
