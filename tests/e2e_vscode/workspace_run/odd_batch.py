"""A training loop whose last batch of each epoch is smaller: 23 rows in batches of 8 give
8, 8 and 7 rows, so the graph changes shape at the line that moves the batch to the device."""

import torch
import torch_xla


def batches(data: torch.Tensor, size: int):
    for start in range(0, len(data), size):
        yield data[start : start + size]


def main() -> None:
    device = torch_xla.device()
    model = torch.nn.Linear(12, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data = torch.randn(23, 12)
    for epoch in range(4):
        for batch in batches(data, 8):
            x = batch.to(device)  # CAUSE
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            torch_xla.sync()  # TRIGGER
        print(f"epoch {epoch} done")


if __name__ == "__main__":
    main()
