"""Wall time of a training loop under ``xla_lens.runner`` vs the bare script (a benchmark, not a
test). Usage: python bench/runner_overhead.py [--reps 3] [--steps 300]

Three ways, same interpreter and torch_xla, CPU PJRT:
  bare     python script.py
  debug    the same with the runner's torch_xla env (PT_XLA_DEBUG_LEVEL=2, PT_XLA_DEBUG=1,
           PT_XLA_DEBUG_FILE): what torch_xla's own analysis costs
  runner   xla_lens.runner.run(): debug env + bootstrap step hook + event parsing
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from xla_lens.runner import RunOptions, run

SCRIPT = """
import sys, torch, torch_xla
device = torch_xla.device()
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(int(sys.argv[1])):
    x = torch.randn(32, 64, device=device)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch_xla.sync()
"""


def timed_subprocess(script: Path, steps: int, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, str(script), str(steps)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - t


def timed_runner(script: Path, steps: int) -> float:
    t = time.perf_counter()
    summary = asyncio.run(run(RunOptions(script, args=[str(steps)])))
    assert summary.status == "ok" and summary.steps == steps, summary.status
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "loop.py"
        script.write_text(SCRIPT)
        base = {**os.environ, "PJRT_DEVICE": "CPU"}
        debug = {
            **base,
            "PT_XLA_DEBUG_LEVEL": "2",
            "PT_XLA_DEBUG": "1",
            "PT_XLA_DEBUG_FILE": str(Path(tmp) / "debug.txt"),
        }
        times: dict[str, list[float]] = {"bare": [], "debug": [], "runner": []}
        for _ in range(ns.reps):  # interleaved, so machine load hits all three alike
            times["bare"].append(timed_subprocess(script, ns.steps, base))
            times["debug"].append(timed_subprocess(script, ns.steps, debug))
            times["runner"].append(timed_runner(script, ns.steps))
    bare = statistics.median(times["bare"])
    print(f"{ns.steps} steps, {ns.reps} reps, median wall seconds (min..max)")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(
            f"  {name:<7} {med:7.2f}  ({min(ts):.2f}..{max(ts):.2f})  "
            f"{100 * (med - bare) / bare:+6.1f}% vs bare"
        )


if __name__ == "__main__":
    main()
