"""Two CPU replicas via torch_xla.launch: a tiny model, gradients reduced across replicas."""

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def _mp_fn(index: int) -> None:
    device = torch_xla.device()
    model = torch.nn.Linear(8, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _step in range(3):
        x = torch.randn(4, 8, device=device)
        loss = model(x).pow(2).mean()
        loss.backward()
        xm.optimizer_step(opt)  # the gradient all-reduce happens here
        torch_xla.sync()
    print(f"replica {xr.global_ordinal()} of {xr.world_size()} done", flush=True)


if __name__ == "__main__":
    torch_xla.launch(_mp_fn, args=())
