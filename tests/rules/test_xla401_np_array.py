"""XLA401 on ``np.array(t)`` / ``np.asarray(t)`` of a device tensor: numpy asks the tensor for
its data through ``__array__``, which on an XLA tensor raises (TypeError: can't convert xla:0
device type tensor to numpy; torch_xla 2.9), exactly as a bare ``t.numpy()`` does. The fix
copies it to the host first, ``np.array(t.cpu())``. A CPU tensor, a Python list or a value
already copied (``t.cpu()``, ``t.item()``) gets no finding. Outside the training loop only a
tensor the script computes on the device (moved there, or a model's output) is reported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from xla_lens.engine import fix_source

from tests.helpers import findings, fixed, src

# A tutorial that falls back to the CPU: numpy conversions ran there (CUDA would raise).
FALLBACK = """
import numpy as np
import numpy
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(0)
x = torch.randn(16, 4, generator=g).to(device)
y = torch.randn(16, 1, generator=g).to(device)
kept = []
for step in range(3):
    out = model(x)
    loss = ((out - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("xla-lens-loss:", loss.item())
    print("loss array", np.array(loss.detach()))
    kept.append(numpy.asarray(out.detach()))
    host = torch.zeros(3)
    print(np.asarray(host), np.array([1.0, 2.0]), np.array(loss.item()))
    print(np.array(out.detach().cpu()).shape, np.asarray(out.detach().cpu()).shape)


def evaluate(net, data):
    with torch.no_grad():
        pred = net(data)
    return np.asarray(pred).round(3), np.array(pred + 1, dtype=np.float64).shape


print("xla-lens-eval:", evaluate(model, x)[0].ravel().tolist())
print("kept", len(kept), kept[-1].shape)
print("xla-lens-param-device:", next(model.parameters()).device)
"""

ARRAY_LINE, ASARRAY_LINE = 20, 21  # 0-based
EVAL_LINE = 30


def _numpy_findings(code: str) -> list:
    return [f for f in findings(code, "XLA401") if "raises TypeError" in f.message]


def test_np_array_of_a_device_tensor_raises_on_xla():
    found = _numpy_findings(FALLBACK)
    assert [f.span.start.line for f in found] == [ARRAY_LINE, ASARRAY_LINE, EVAL_LINE, EVAL_LINE]
    for f in found:
        assert "can't convert xla:0 device type tensor to numpy" in f.message
        assert "a crash the conversion introduces" in f.message
        assert f.fix is not None and ".cpu()" in f.fix.title
    array, kept, printed_eval, shape_eval = found
    assert "np.array()" in array.message and "`loss.detach()`" in array.message
    # np.array copies either way: on the CPU it copied the tensor, after `.cpu()` it copies
    # the host copy: the array the program gets is the same.
    assert array.fix.safe and shape_eval.fix.safe
    # np.asarray shares a CPU tensor's memory; of an XLA tensor's `.cpu()` it is a copy.
    assert "numpy.asarray()" in kept.message
    assert not kept.fix.safe and "shares the tensor's memory" in kept.fix.review_reason
    # Consumed at once (`.round()` makes a new array): nothing can see the difference.
    assert printed_eval.fix.safe
    assert "outside the training loop" in printed_eval.message
    assert "every step" not in printed_eval.message


def test_the_fixes_copy_to_the_host_first():
    out = fixed(FALLBACK, "XLA401")
    assert 'print("loss array", np.array(loss.detach().cpu()))' in out
    assert "kept.append(numpy.asarray(out.detach()))" in out  # for review
    assert "np.asarray(pred.cpu()).round(3), np.array((pred + 1).cpu(), dtype=" in out
    reviewed = fixed(FALLBACK, "XLA401", unsafe=True)
    assert "kept.append(numpy.asarray(out.detach().cpu()))" in reviewed


def test_host_values_lists_and_copies_are_no_crash():
    code = """
    import numpy as np
    import torch

    device = torch.device("cuda")
    model = torch.nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        out = model(torch.randn(8, 4, device=device))
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        host = torch.zeros(3)
        scores = [1.0, 2.0]
        print(np.asarray(host), np.array(scores), np.array(loss.item()))
        print(np.asarray(out.detach().to("cpu")), np.array(out.tolist()))
    """
    assert _numpy_findings(code) == []
    # The `.cpu()` copies are still host reads (an extra sync), not crashes.
    code2 = code.replace('out.detach().to("cpu")', "out.detach().cpu()")
    [read] = [
        f
        for f in findings(code2, "XLA401")
        if ".cpu()" in f.message.split(" (the fix needs review")[0]
    ]
    assert "raises" not in read.message


def test_a_list_of_device_tensors_gets_no_cpu_call():
    # `predictions.cpu()` would be an AttributeError: a list is not a tensor.
    code = """
    import numpy as np
    import torch

    device = torch.device("cuda")
    model = torch.nn.Linear(4, 1).to(device)


    def evaluate(outputs):
        predictions = []
        for _ in range(3):
            pred = model(torch.randn(8, 4, device=device))
            predictions.append(pred.argmax(1))
        both = predictions + predictions
        return np.array(predictions), np.array(both), np.asarray(outputs), np.array([pred])
    """
    assert findings(code, "XLA401") == []


def test_a_copy_keyword_is_for_review():
    code = FALLBACK.replace("np.array(loss.detach())", "np.array(loss.detach(), copy=False)")
    [f] = [f for f in _numpy_findings(code) if f.span.start.line == ARRAY_LINE]
    assert not f.fix.safe and "copy=" in f.fix.review_reason


# Data pipelines: tensors made on the CPU, never moved: no finding outside the loop.
PIPELINE = """
import numpy as np
import torch

device = torch.device("cuda")


class Pairs(torch.utils.data.Dataset):
    def __init__(self, arr):
        self.arr = arr

    def __getitem__(self, i):
        t = torch.from_numpy(self.arr[i])
        return np.asarray(t), t.numpy()


def preview(loader):
    for xb, yb in loader:
        return np.array(xb), xb.numpy()


def evaluate(net, loader):
    outs = []
    for xb, yb in loader:
        pred = net(xb.to(device))
        outs.append(pred.numpy())
    return outs


def embed(arr):
    # A model built here and never moved runs on the CPU.
    encoder = torch.nn.Linear(4, 2)
    return encoder(torch.from_numpy(arr)).detach().numpy()


def colorize(image, tokenizer):
    # Made on the device of a tensor the script does not show on one; a method of an
    # object not known to be a placed model.
    cmap = torch.ones(3, device=image.device)
    ids = tokenizer.encode(image)
    return (image * cmap).numpy(), np.asarray(ids)
"""


def test_cpu_data_pipelines_outside_the_loop_are_quiet():
    found = findings(PIPELINE, "XLA401")
    # Only the model output of the evaluation raises; the dataset's and preview's are CPU data.
    assert [f.span.start.line for f in found] == [24]
    assert "outside the training loop" in found[0].message
    assert "pred.cpu().numpy()" in fixed(PIPELINE, "XLA401", unsafe=True)


def test_a_cpu_script_gets_nothing_outside_the_loop():
    # Nothing is placed on a device (XLA117): the evaluation's tensors stay on the CPU.
    code = """
    import numpy as np
    import torch

    net = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    for step in range(10):
        loss = net(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


    def evaluate(model, data):
        with torch.no_grad():
            out = model(data)
        return np.asarray(out), out.numpy()
    """
    assert findings(code, "XLA117")
    assert findings(code, "XLA401") == []
    # The same script on a device: the evaluation's output raises after conversion.
    moved = code.replace("torch.nn.Linear(4, 1)", "torch.nn.Linear(4, 1).cuda()")
    found = findings(moved, "XLA401")
    assert [f.span.start.line for f in found] == [16, 16]


# --- proof by running ------------------------------------------------------------------------
@pytest.mark.xla
def test_converted_np_array_script_runs_on_xla(tmp_path: Path):
    """One subprocess: the original (CPU) and the converted script (PJRT CPU) in turn."""
    out = fix_source(src(FALLBACK), "fallback.py", unsafe=True)
    assert out.error is None
    assert "torch_xla.device()" in out.source
    assert "numpy.asarray(out.detach().cpu())" in out.source
    bare = fix_source(
        src(FALLBACK), "fallback.py", unsafe=True, accept=lambda f: f.code != "XLA401"
    ).source
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "original.py").write_text(src(FALLBACK))
    (folder / "converted.py").write_text(out.source)
    (folder / "bare.py").write_text(bare)
    # The three scripts run in one interpreter (one torch_xla start), each in its own globals;
    # the XLA ones first: autograd sizes its device queues at the first backward.
    driver = (
        "import runpy\n"
        "for name in ('converted', 'bare', 'original'):\n"
        "    print('== ' + name, flush=True)\n"
        "    try:\n"
        "        runpy.run_path(name + '.py', run_name='__main__')\n"
        "    except Exception as e:\n"
        "        print('xla-lens-error:', type(e).__name__, e)\n"
    )
    (folder / "driver.py").write_text(driver)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "1"}
    run = subprocess.run(
        [sys.executable, "driver.py"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    parts = dict(p.split("\n", 1) for p in run.stdout.split("== ")[1:])
    original, converted, crashed = parts["original"], parts["converted"], parts["bare"]
    assert "xla-lens-error" not in original and "xla-lens-error" not in converted, run.stdout
    assert "xla-lens-param-device: cpu" in original
    assert "xla-lens-param-device: xla:0" in converted
    assert converted.count("loss array") == 3 and "kept 3 (16, 1)" in converted

    def numbers(text: str, tag: str) -> list[float]:
        out: list[float] = []
        for line in text.splitlines():
            if line.startswith(tag):
                out += [float(v) for v in line[len(tag) :].strip(" []").split(",")]
        return out

    assert numbers(converted, "xla-lens-loss:") == pytest.approx(
        numbers(original, "xla-lens-loss:"), rel=1e-4
    )
    assert numbers(converted, "xla-lens-eval:") == pytest.approx(
        numbers(original, "xla-lens-eval:"), abs=1e-3
    )
    # The control: without XLA401's copies the converted script raises the TypeError.
    assert "xla-lens-error: TypeError can't convert xla:0 device type tensor to numpy" in crashed
