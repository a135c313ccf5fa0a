"""A training loop with a deliberate recompilation and a host read, for the run tests.

The batch grows every step, so every torch_xla.sync compiles a new graph; .item() reads the
loss on the host before the step is synced. Tests find the lines by their marker comments.
"""

import torch
import torch_xla


def main() -> None:
    torch.backends.cudnn.benchmark = True  # STATIC: a CUDA-only setting (XLA403)
    device = torch_xla.device()
    model = torch.nn.Linear(8, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1000):
        batch = 2 + step  # SHAPE-CHANGE: a new batch size every step
        x = torch.randn(batch, 8, device=device)
        loss = model(x).pow(2).mean()
        seen = loss.item()  # HOST-READ
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch_xla.sync()  # RECOMPILE
    print("last loss", seen)


if __name__ == "__main__":
    main()
