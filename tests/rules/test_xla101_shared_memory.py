"""XLA101's device fixes wait for review where the script shares memory across processes:
``share_memory()`` raises on XLA tensors, and on an XLA host the CUDA-or-CPU picker keeps such
a Hogwild script on the CPU, where it runs (Popular-RL-Algorithms' PPO, held-out 71)."""

import os
import subprocess
import sys

import pytest

from tests.helpers import findings, fixed

HOGWILD = """
import torch
import torch.multiprocessing as mp

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Agent:
    def __init__(self):
        self.actor = torch.nn.Linear(3, 2).to(device)


def worker(agent):
    agent.actor(torch.ones(1, 3, device=device)).sum().backward()


if __name__ == "__main__":
    agent = Agent()
    agent.actor.share_memory()
    p = mp.Process(target=worker, args=(agent,))
    p.start()
    p.join()
    print("exit", p.exitcode)
"""


def test_the_picker_fix_of_a_hogwild_script_is_a_review_naming_the_sharing():
    (f,) = [f for f in findings(HOGWILD, "XLA101") if "device picker" in f.message]
    assert f.fix is not None and not f.fix.safe
    assert f.fix.review_reason.startswith(
        "the script shares modules or tensors across processes (`agent.actor.share_memory()`, "
        "line 18)"
    )
    assert "torch.device(" in fixed(HOGWILD, "XLA101")  # nothing applied without review


def test_without_sharing_the_picker_fix_stays_safe():
    plain = HOGWILD.replace("    agent.actor.share_memory()\n", "")
    (f,) = [f for f in findings(plain, "XLA101") if "device picker" in f.message]
    assert f.fix.safe, f.fix.review_reason


@pytest.mark.xla
def test_the_device_fix_would_turn_the_working_script_into_a_crash(tmp_path):
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONWARNINGS": "ignore"}
    unsafe = fixed(HOGWILD, "XLA101", unsafe=True)
    assert "torch_xla.device()" in unsafe
    runs = {}
    for name, text in (("original", HOGWILD), ("reviewed", unsafe)):
        script = tmp_path / f"{name}.py"
        script.write_text(text, encoding="utf-8")
        runs[name] = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240
        )
    assert runs["original"].returncode == 0 and "exit 0" in runs["original"].stdout
    assert runs["reviewed"].returncode != 0
    assert "only available on CPU" in runs["reviewed"].stderr
