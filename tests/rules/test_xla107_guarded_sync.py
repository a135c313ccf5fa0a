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


TRY_IMPORT = src("""
import torch

try:
    import torch_xla.core.xla_model as xm
    HAS_XLA = True
except ImportError:
    HAS_XLA = False


def train(model, loader, optimizer):
    for batch in loader:
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if HAS_XLA:
            xm.mark_step()
    return xm.xla_device() if HAS_XLA else "cpu"
""")


def test_new_torch_xla_imports_join_a_try_import_block():
    out = fixed(TRY_IMPORT)
    tree = ast.parse(out)
    assert not any(
        isinstance(s, ast.Import | ast.ImportFrom) and "torch_xla" in ast.unparse(s)
        for s in tree.body
    ), out
    block = next(s for s in tree.body if isinstance(s, ast.Try))
    assert "import torch_xla\n" in ast.unparse(block) + "\n"
    assert out.count("import torch_xla.core.xla_model as xm") == 1


LOCAL_IMPORT = src("""
import torch


def pick_device(use_xla):
    if use_xla:
        import torch_xla.core.xla_model as xm
        return xm.xla_device()
    return torch.device("cpu")
""")


def test_a_module_import_where_the_script_imports_torch_xla_locally_waits_for_review():
    (f,) = findings(LOCAL_IMPORT, "XLA501")
    assert f.fix is not None and not f.fix.safe
    assert "imports torch_xla only inside" in f.fix.review_reason
    assert fixed(LOCAL_IMPORT) == LOCAL_IMPORT
