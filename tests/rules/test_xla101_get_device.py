"""XLA101 on ``device=x.get_device()`` (FastPitch's ``binarize_attention``, held-out 39): on an
XLA tensor ``get_device()`` is 0, which as a device means cuda:0 ("Found no NVIDIA driver",
measured); ``x.device`` names the device itself, the same on CUDA."""

import os
import subprocess
import sys

import pytest

from tests.helpers import findings, fixed

CODE = """
import torch


def binarize(attn):
    out = torch.zeros_like(attn)
    mask = torch.ones(attn.shape, device=attn.get_device())
    return out.to(attn.get_device()) * mask, attn.get_device() + 1
"""


def test_get_device_as_a_device_becomes_the_device_itself():
    found = findings(CODE, "XLA101")
    assert len(found) == 2 and all(f.fix is not None and f.fix.safe for f in found)
    out = fixed(CODE, "XLA101")
    assert "device=attn.device)" in out and "out.to(attn.device)" in out
    assert "attn.get_device() + 1" in out  # a number, not a device: left alone


@pytest.mark.xla
def test_the_fixed_placement_runs_on_xla_where_the_original_fails(tmp_path):
    run_code = CODE + "\nimport torch_xla\nbinarize(torch.ones(2, 2, device=torch_xla.device()))\n"
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONWARNINGS": "ignore"}
    for text, ok in ((run_code, False), (fixed(run_code, "XLA101"), True)):
        script = tmp_path / "attn.py"
        script.write_text(text, encoding="utf-8")
        run = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240
        )
        assert (run.returncode == 0) is ok, run.stderr[-600:]


def test_a_modules_own_get_device_method_is_left_alone():
    # nanochat's GPT defines get_device() returning a device; ``model.device`` would not exist.
    code = CODE.replace("attn.get_device()", "model.get_device()").replace(
        "def binarize(attn):", "def binarize(attn, model):"
    )
    assert findings(code, "XLA101") == []
    own = CODE + "\n\nclass Net:\n    def get_device(self):\n        return 'cpu'\n"
    assert findings(own, "XLA101") == []


def test_an_imported_modules_get_device_is_its_own_function():
    # Held-out 55 (VAR): ``from utils import dist`` then ``dist.get_device()``, which returns
    # the device; ``dist.device`` would be an AttributeError.
    code = """
    import torch
    from utils import dist

    def build():
        return torch.zeros(3, device=dist.get_device())
    """
    assert [f for f in findings(code, "XLA101") if "CUDA index" in f.message] == []
