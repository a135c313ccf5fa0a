"""XLA401 on ``t.numpy()`` with no copy to the host before it: on an XLA tensor ``.numpy()``
raises (TypeError: can't convert xla:0 device type tensor to numpy; torch_xla 2.9), as it
does on a CUDA tensor. Where the original ran such a line, the tensor was on the CPU: if the
conversion puts it on the XLA device, the line becomes a crash the conversion introduces. A
step closure keeps the crash; ``.cpu().numpy()`` is the fix (on a CPU tensor ``.cpu()`` is
the tensor itself, so the original's run does not change)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from xla_lens.engine import fix_source

from tests.helpers import findings, fixed, src

# A tutorial that falls back to the CPU: `.numpy()` ran there (on CUDA it would raise).
FALLBACK = """
import os
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(0)
x = torch.randn(16, 4, generator=g).to(device)
y = torch.randn(16, 1, generator=g).to(device)
history = []
for step in range(int(os.environ.get("XLA_LENS_STEPS", "3"))):
    out = model(x)
    loss = ((out - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("xla-lens-loss:", loss.item())
    print("loss array", loss.data.numpy())
    history.append(out.detach().numpy())
print("kept", len(history), history[-1].shape)
print("xla-lens-param-device:", next(model.parameters()).device)
"""


def test_bare_numpy_says_it_raises_on_the_xla_device():
    found = [
        f
        for f in findings(FALLBACK, "XLA401")
        if ".numpy()" in f.message.split(" (the fix needs review")[0]
    ]
    assert [f.span.start.line for f in found] == [19, 20]  # 0-based
    for f in found:
        assert "raises TypeError" in f.message
        assert "can't convert xla:0 device type tensor to numpy" in f.message
        assert "a crash the conversion introduces" in f.message
        assert "`.cpu().numpy()`" in f.message
        assert f.fix is not None and ".cpu().numpy()" in f.fix.title
    printed, kept = found
    # Printed at once: `.cpu()` changes nothing the original did.
    assert printed.fix.safe
    # Kept: on the CPU the array shares the tensor's memory, a copy of an XLA tensor does not.
    assert not kept.fix.safe
    assert "shares the tensor's memory" in kept.fix.review_reason


def test_the_safe_fixes_copy_to_the_host_then_defer_the_report():
    out = fixed(FALLBACK, "XLA401")
    assert "history.append(out.detach().numpy())" in out  # for review
    # One round copies to the host, the next moves the report into a step closure.
    assert 'print("loss array", loss.data.cpu().numpy())' in out
    assert "add_step_closure" in out.split("loss.data.cpu().numpy()")[0].splitlines()[-1]
    reviewed = fixed(FALLBACK, "XLA401", unsafe=True)
    assert "out.detach().cpu().numpy()" in reviewed


def test_a_copy_to_the_host_first_is_no_crash():
    code = FALLBACK.replace("loss.data.numpy()", "loss.data.cpu().numpy()").replace(
        "out.detach().numpy()", "out.detach().to('cpu').numpy()"
    )
    found = [
        f
        for f in findings(code, "XLA401")
        if ".numpy()" in f.message.split(" (the fix needs review")[0]
    ]
    assert len(found) == 2
    assert not any("raises" in f.message for f in found)
    assert all("add_step_closure" in f.fix.title for f in found if f.fix is not None)


def test_a_read_through_a_bare_numpy_gets_the_copy_too():
    code = FALLBACK.replace(
        'print("loss array", loss.data.numpy())', "print(loss.data.numpy().tolist())"
    )
    [f] = [f for f in findings(code, "XLA401") if f.span.start.line == 19]
    assert "raises TypeError" in f.message and f.fix is not None and f.fix.safe
    assert "print(loss.data.cpu().numpy().tolist())" in fixed(code, "XLA401")


def test_a_bare_numpy_right_after_the_sync_still_raises():
    # No graph to save (the sync computed it), but `.numpy()` of an XLA tensor still raises.
    code = """
    import torch
    import torch_xla

    device = torch_xla.device()
    for x, y in loader:
        out = model(x.to(device))
        loss = criterion(out, y.to(device))
        acc = (out.argmax(1) == y.to(device)).float().mean()
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        print(acc.numpy(), loss.item())
    """
    [f] = findings(code, "XLA401")
    assert "raises TypeError" in f.message and f.fix is not None and f.fix.safe
    assert "print(acc.cpu().numpy(), loss.item())" in fixed(code, "XLA401")


def test_numpy_force_copies_itself():
    code = FALLBACK.replace("loss.data.numpy()", "loss.numpy(force=True)")
    found = [f for f in findings(code, "XLA401") if f.span.start.line == 19]
    assert found and "raises" not in found[0].message


def test_cpu_script_says_it_raises_once_moved():
    code = """
    import torch
    import torch.nn as nn

    x = torch.linspace(-1, 1, 50).unsqueeze(1)
    net = nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for t in range(100):
        prediction = net(x)
        loss = (prediction - x.pow(2)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if t % 20 == 0:
            print("loss", loss.data.numpy())
    """
    [f] = findings(code, "XLA401")
    assert (
        "XLA117" in f.message
        and "once the model and its batches are on the XLA device" in f.message
    )
    assert "raises TypeError" in f.message and "crash the conversion introduces" not in f.message
    assert f.fix is not None and f.fix.safe and "loss.data.cpu().numpy()" in fixed(code, "XLA401")


# --- proof by running ------------------------------------------------------------------------
def _run(source: str, folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "fallback.py"
    script.write_text(source)
    full = {**os.environ, "XLA_LENS_STEPS": "3", "CUDA_VISIBLE_DEVICES": "", **env}
    return subprocess.run(
        [sys.executable, str(script)], env=full, capture_output=True, text=True, timeout=240
    )


@pytest.mark.xla
def test_converted_fallback_script_runs_on_xla(tmp_path: Path):
    original = _run(src(FALLBACK), tmp_path / "original", USE_TORCH_XLA="0")
    assert original.returncode == 0, original.stderr[-2000:]
    # Every fix Convert offers (the kept array's copy is for review: accepted here).
    out = fix_source(src(FALLBACK), "fallback.py", unsafe=True)
    assert out.error is None
    assert "torch_xla.device()" in out.source and "out.detach().cpu().numpy()" in out.source
    converted = _run(out.source, tmp_path / "converted", PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1")
    assert converted.returncode == 0, converted.stderr[-2000:]
    assert "xla-lens-param-device: xla:0" in converted.stdout
    assert converted.stdout.count("loss array") == 3
    assert "kept 3 (16, 1)" in converted.stdout
    ours = [
        float(line.split()[-1]) for line in converted.stdout.splitlines() if "xla-lens-loss" in line
    ]
    theirs = [
        float(line.split()[-1]) for line in original.stdout.splitlines() if "xla-lens-loss" in line
    ]
    assert ours == pytest.approx(theirs, rel=1e-4)
    # The control: the same conversion without XLA401's copy crashes where the docstring says.
    bare = fix_source(
        src(FALLBACK), "fallback.py", unsafe=True, accept=lambda f: f.code != "XLA401"
    )
    crashed = _run(bare.source, tmp_path / "bare", PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1")
    assert crashed.returncode != 0
    assert "can't convert xla:0 device type tensor to numpy" in crashed.stderr
