"""An already-XLA training loop with two deliberate performance problems.

1. The batch size changes from step to step, so every new shape compiles a new graph.
2. The loss is read on the host inside the loop, which forces an execution before the sync.
The runner's tests check that its events point at exactly the two lines marked "deliberate".
Run with: PJRT_DEVICE=CPU python samples/xla_recompile.py --steps 6
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    args, _ = parser.parse_known_args()

    torch.manual_seed(0)
    # torch.randn on the XLA device draws from the XLA generator, not the CPU one.
    torch_xla.manual_seed(0)
    device = torch_xla.device()

    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    for step in range(args.steps):
        batch = 4 + step % 3
        x = torch.randn(batch, 16, device=device)  # deliberate: shape changes -> recompilation
        y = x.sum(dim=1, keepdim=True)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        value = loss.item()  # deliberate: host read
        print(f"step={step} loss={value:.6f}", flush=True)
        torch_xla.sync()


if __name__ == "__main__":
    main()
