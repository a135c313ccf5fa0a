"""XLA401: a device value stored into a tensor the script made on the CPU (held-out 78's SAINT
``embed_data_mask``: ``x_cont_enc = torch.empty(n1, n2, dim)`` then ``x_cont_enc[:, i, :] =
model.simple_MLP[i](x_cont[:, i])``, every step): each store runs the graph and copies to the
host."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import findings, src

LOOP = """
import torch

device = torch.device("cuda")
model = torch.nn.Linear(4, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 3, 4, device=device)
    buf = torch.empty(8, 3, 4)
    for i in range(3):
        buf[:, i, :] = model(x[:, i])
    ready = torch.zeros(8, 3, 4, device=device)
    ready[:, 0, :] = model(x[:, 0])
    host = torch.zeros(3)
    host[0] = 1.0
    loss = buf.to(device).sum() + ready.sum()
    loss.backward()
    opt.step()
"""


def test_a_store_into_a_cpu_buffer_in_the_loop_is_a_host_read():
    found = [f for f in findings(LOOP, "XLA401") if "store into a CPU tensor" in f.message]
    assert [f.span.start.line + 1 for f in found] == [10]  # not the device buffer, not 1.0
    assert "made by torch.empty on line 8" in found[0].message
    assert "device=x.device" in found[0].manual


HELPER = """
import torch


def embed(x, mlps):
    out = torch.empty(x.shape[0], x.shape[1], 4)
    for i, mlp in enumerate(mlps):
        out[:, i, :] = mlp(x[:, i : i + 1])
    return out.to(x.device)
"""

TRAIN = """
import torch
from augment import embed

device = torch.device("cuda")
mlps = torch.nn.ModuleList([torch.nn.Linear(1, 4) for _ in range(3)]).to(device)
opt = torch.optim.SGD(mlps.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 3, device=device)
    loss = embed(x, mlps).sum()
    loss.backward()
    opt.step()
"""


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_a_store_in_a_sibling_helper_is_named_at_the_call(tmp_path: Path):
    (tmp_path / "augment.py").write_text(src(HELPER))
    script = tmp_path / "train.py"
    text = src(TRAIN)
    script.write_text(text)
    found = [
        f
        for f in analyze(text, path=str(script)).findings
        if f.code == "XLA401" and "store into a CPU tensor" in f.message
    ]
    assert [f.span.start.line + 1 for f in found] == [9]
    assert "augment.py:7 in `embed`" in found[0].message and "on line 5" in found[0].message
