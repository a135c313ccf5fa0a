"""A Python branch picks different ops each step: three graphs for one sync line."""

import torch
import torch_xla

device = torch_xla.device()
acc = torch.zeros(4, device=device)
for step in range(6):
    x = torch.full((4,), 3.0, device=device)
    if step % 3 == 0:
        acc = acc + x  # BRANCH-A
    elif step % 3 == 1:
        acc = acc + torch.relu(x)  # BRANCH-B
    else:
        acc = acc + torch.sigmoid(x)  # BRANCH-C
    torch_xla.sync()  # TRIGGER
print("done", flush=True)
