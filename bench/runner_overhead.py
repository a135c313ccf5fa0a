"""Wall time of a training loop under ``xla_lens.runner`` vs the bare script (a benchmark, not a
test). Usage: python bench/runner_overhead.py [--reps 3] [--steps 300]

Same interpreter and torch_xla, CPU PJRT:
  bare         python script.py
  debug        the same with the runner's torch_xla env (PT_XLA_DEBUG_LEVEL=2, PT_XLA_DEBUG=1,
               PT_XLA_DEBUG_FILE): what torch_xla's own analysis costs
  runner       xla_lens.runner.run() with the explain window off (explain_steps=0): debug env +
               bootstrap step hook + event parsing
  explain      the runner as shipped: graphs dumped for the first 30 steps (explain.py), then
               torch_xla still formats each synced graph into /dev/null
  explain-all  the dump kept on for every step: what the window saves
Besides the run's wall time (interpreter and torch_xla start-up included), the loop's own CPU
time after its warm-up steps, as the script measures it, shows the per-step cost.
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
from xla_lens.runner.events import Output

SCRIPT = """
import sys, time, torch, torch_xla
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
    if step == 1:
        t0, c0 = time.perf_counter(), time.process_time()  # after the warm-up compiles
print(f"loop_s={time.perf_counter() - t0:.4f} cpu_s={time.process_time() - c0:.4f}", flush=True)
"""


def _loop_s(lines: list[str]) -> float:
    """The loop's CPU seconds (all threads): on a busy machine far steadier than its wall time,
    which other processes' load inflates."""
    line = next(x for x in lines if x.startswith("loop_s="))
    return float(line.split("cpu_s=", 1)[1])


def timed_subprocess(script: Path, steps: int, env: dict[str, str]) -> tuple[float, float]:
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(script), str(steps)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - t, _loop_s(done.stdout.splitlines())


def timed_runner(script: Path, steps: int, explain_steps: int) -> tuple[float, float]:
    out: list[str] = []

    def on_event(ev) -> None:
        if isinstance(ev, Output):
            out.append(ev.text)

    t = time.perf_counter()
    options = RunOptions(script, args=[str(steps)], explain_steps=explain_steps)
    summary = asyncio.run(run(options, on_event))
    assert summary.status == "ok" and summary.steps == steps, summary.status
    return time.perf_counter() - t, _loop_s(out)


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
        ways = {
            "bare": lambda: timed_subprocess(script, ns.steps, base),
            "debug": lambda: timed_subprocess(script, ns.steps, debug),
            "runner": lambda: timed_runner(script, ns.steps, 0),
            "explain": lambda: timed_runner(script, ns.steps, RunOptions.explain_steps),
            "explain-all": lambda: timed_runner(script, ns.steps, ns.steps + 1),
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
        for _ in range(ns.reps):  # interleaved, so machine load hits every way alike
            for name, way in ways.items():
                times[name].append(way())
    bare_wall = statistics.median(w for w, _ in times["bare"])
    bare_loop = statistics.median(lp for _, lp in times["bare"])
    print(f"{ns.steps} steps, {ns.reps} reps, medians: run wall s, loop CPU s (min..max)")
    for name, ts in times.items():
        wall = statistics.median(w for w, _ in ts)
        loops = [lp for _, lp in ts]
        loop = statistics.median(loops)
        print(
            f"  {name:<11} wall {wall:6.2f} {100 * (wall - bare_wall) / bare_wall:+6.1f}%   "
            f"loop cpu {loop:6.2f} ({min(loops):.2f}..{max(loops):.2f}) "
            f"{100 * (loop - bare_loop) / bare_loop:+6.1f}% vs bare"
        )


if __name__ == "__main__":
    main()
