"""An XLA training loop that never ends, printing a heartbeat each iteration.

The cancel tests start it, wait for the first heartbeat, and check that stopping the run
really ends the process. Run with: PJRT_DEVICE=CPU python samples/xla_forever.py
"""

import argparse
import itertools
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def main():
    parser = argparse.ArgumentParser()
    # Idles between steps so that a run left behind does not hog the CPUs it shares.
    parser.add_argument("--sleep", type=float, default=0.1)
    args, _ = parser.parse_known_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Linear(8, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 8).to(device)
    y = x.sum(dim=1, keepdim=True)

    for step in itertools.count():
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        # flush: the reader is a pipe, and the test waits on this line to know the loop runs.
        print(f"heartbeat step={step}", flush=True)
        time.sleep(args.sleep)


if __name__ == "__main__":
    main()
