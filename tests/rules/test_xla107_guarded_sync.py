"""XLA107 in a script that switches on torch_xla's availability (held-out 15, SimCSE's copied
HF training loop): the sync is written the script's way, ``if is_torch_tpu_available():``
around it, and every torch_xla import a fix adds goes into the script's guarded import block,
so the GPU mode (no torch_xla installed) still imports and runs as before."""

import ast

from tests.helpers import findings, fixed, src

DUAL = src("""
import torch
from transformers.utils import is_torch_tpu_available

if is_torch_tpu_available():
    import torch_xla.core.xla_model as xm


def train(model, loader, optimizer):
    if is_torch_tpu_available():
        world = xm.xrt_world_size()
    else:
        world = torch.cuda.device_count()
    for batch in loader:
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return world
""")


def test_the_sync_is_guarded_like_the_scripts_other_xla_calls():
    (f,) = findings(DUAL, "XLA107")
    assert f.fix is not None and f.fix.safe
    assert "under `if is_torch_tpu_available():`" in f.fix.title


def test_after_convert_the_gpu_mode_imports_no_torch_xla():
    out = fixed(DUAL)
    tree = ast.parse(out)
    top_imports = [
        s
        for s in tree.body
        if isinstance(s, ast.Import | ast.ImportFrom) and "torch_xla" in ast.unparse(s)
    ]
    assert top_imports == [], out
    guard = next(s for s in tree.body if isinstance(s, ast.If))
    assert all(isinstance(s, ast.Import | ast.ImportFrom) for s in guard.body)
    loop = next(n for n in ast.walk(tree) if isinstance(n, ast.For))
    last = loop.body[-1]
    assert isinstance(last, ast.If) and "is_torch_tpu_available()" in ast.unparse(last.test)
    assert fixed(out) == out  # idempotent
