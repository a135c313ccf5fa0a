"""A CUDA script that was never converted: it trains on plain PyTorch, not on XLA."""

import torch


def main() -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    print("trained on", device)


if __name__ == "__main__":
    main()
