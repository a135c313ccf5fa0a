"""Trains until it is cancelled: a small XLA step, then a pause, for ever."""

import time

import torch
import torch_xla


def main() -> None:
    device = torch_xla.device()
    w = torch.zeros(4, device=device)
    step = 0
    while True:
        w = w + 1
        torch_xla.sync()
        step += 1
        print(f"step {step}", flush=True)
        time.sleep(0.3)


if __name__ == "__main__":
    main()
