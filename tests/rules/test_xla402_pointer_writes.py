"""XLA402 on a device tensor written at a Python int pointer that moves on every call: the
replay buffer of DQN-style training (DRL-Pytorch, held-out 71). Each new index value is a new
graph; a device-tensor index keeps one."""

import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import findings

BUFFER = """
import torch


class ReplayBuffer:
    def __init__(self, dim, dvc, max_size=int(1e6)):
        self.max_size, self.ptr, self.size = max_size, 0, 0
        self.s = torch.zeros((max_size, dim), dtype=torch.float, device=dvc)
        self.a = torch.zeros((max_size, 1), dtype=torch.long, device=dvc)

    def add(self, s, a):
        self.s[self.ptr] = torch.from_numpy(s).to(self.s.device)
        self.a[self.ptr] = a
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample(self, n):
        ind = torch.randint(0, self.size, device=self.s.device, size=(n,))
        return self.s[ind], self.a[ind]


buffer = ReplayBuffer(4, torch.device("cuda"))
"""


def _pointer(code: str):
    return [f for f in findings(code, "XLA402") if "Python int that moves" in f.message]


def test_writes_at_a_moving_pointer_are_one_finding_per_pointer():
    (f,) = _pointer(BUFFER)
    assert f.message.startswith(
        "`self.s[self.ptr]`, `self.a[self.ptr]` write device tensors at a Python int that moves "
        "on every call (`self.ptr`, stepped on line 13)"
    )
    assert f.fix is None and "index_copy_(0, torch.tensor([ptr], device=buf.device)" in f.manual
    # The sampled indices are a device tensor already: no finding there.
    assert f.span.start.line == 10


def test_a_cpu_buffer_or_a_fixed_index_is_left_alone():
    cpu = BUFFER.replace("device=dvc)", 'device="cpu")')
    assert _pointer(cpu) == []
    fixed_slot = BUFFER.replace("        self.ptr = (self.ptr + 1) % self.max_size\n", "")
    assert _pointer(fixed_slot) == []


@pytest.mark.xla
def test_each_pointer_value_compiles_a_graph_and_index_copy_does_not(tmp_path):
    script = tmp_path / "ptr.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, torch, torch_xla, torch_xla.debug.metrics as met
            dev = torch_xla.device()
            buf = torch.zeros(100, 4, device=dev)
            torch_xla.sync()
            met.clear_all()
            for ptr in range(8):
                v = torch.full((4,), float(ptr)).to(dev)
                if sys.argv[1] == "int":
                    buf[ptr] = v
                else:
                    buf.index_copy_(0, torch.tensor([ptr], device=dev), v.unsqueeze(0))
                torch_xla.sync()
            print(met.counter_value("UncachedCompile"), buf[:8, 0].sum().item())
            """
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONWARNINGS": "ignore"}
    out = {}
    for kind in ("int", "index_copy"):
        run = subprocess.run(
            [sys.executable, str(script), kind],
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
        )
        assert run.returncode == 0, run.stderr[-800:]
        out[kind] = run.stdout.split()
    assert out["int"] == ["8", "28.0"] and out["index_copy"] == ["1", "28.0"]
