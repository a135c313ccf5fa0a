"""A loop with a deliberate recompilation (batch size changes every step) and a host read."""

import torch
import torch_xla

device = torch_xla.device()
model = torch.nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    batch = 2 + step  # SHAPE-CHANGE: a new batch size every step
    x = torch.randn(batch, 8, device=device)  # CAUSE: the new shape is made here
    loss = model(x).pow(2).mean()
    seen = loss.item()  # HOST-READ: reads the loss before the step is synced
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch_xla.sync()  # RECOMPILE: compiles a new graph every step
print("done", flush=True)
