from xla_lens.rules.base import Severity
from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

LEGACY_CODE = """
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.amp

def _mp_fn(index):
    device = xm.xla_device()
    world = xm.xrt_world_size()
    rank = xm.get_ordinal()
    local = xm.get_local_ordinal()
    scaler = torch_xla.amp.GradScaler(init_scale=2.0)
    xm.mark_step()

xmp.spawn(_mp_fn, args=(), nprocs=None)
"""


def test_modern_target_reports_deprecated_and_removed_api():
    found = findings(LEGACY_CODE, "XLA501")
    by_line = {f.span.start.line: f for f in found}
    assert sorted(by_line) == [5, 6, 7, 9, 10, 12]
    assert by_line[5].severity == Severity.WARNING and by_line[5].deprecated
    assert by_line[10].deprecated
    for line in (6, 7, 9):
        assert by_line[line].severity == Severity.ERROR
        assert "AttributeError" in by_line[line].message
        assert not by_line[line].deprecated
    assert by_line[12].severity == Severity.INFORMATION


def test_modern_fix_rewrites_to_the_current_api():
    assert fixed(LEGACY_CODE, "XLA501") == src(
        """
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.xla_multiprocessing as xmp
        import torch_xla.amp
        import torch_xla.runtime as xr
        import torch

        def _mp_fn(index):
            device = torch_xla.device()
            world = xr.world_size()
            rank = xr.global_ordinal()
            local = xm.get_local_ordinal()
            scaler = torch.amp.GradScaler("xla", init_scale=2.0)
            torch_xla.sync()

        xmp.spawn(_mp_fn, args=(), nprocs=None)
        """
    )


def test_launcher_rewrite_waits_for_review():
    """torch_xla 2.9's launch() calls the function in this process when torchrun's environment
    is set and raises under SPMD, where xmp.spawn spawns: not the same call everywhere."""
    spawn = [f for f in findings(LEGACY_CODE, "XLA501") if "spawn" in f.message]
    assert len(spawn) == 1 and not spawn[0].fix.safe
    assert "TORCHELASTIC_RUN_ID" in spawn[0].fix.review_reason
    out = fixed(LEGACY_CODE, "XLA501", unsafe=True)
    assert "torch_xla.launch(_mp_fn, args=())" in out and "xmp.spawn" not in out.split("def")[-1]


def test_legacy_target_accepts_the_guides_api():
    assert findings(LEGACY_CODE, "XLA501", target="legacy") == []


MODERN_CODE = """
import torch
import torch_xla
import torch_xla.runtime as xr

def _mp_fn(index):
    torch_xla.manual_seed(0)
    device = torch_xla.device()
    n, r, l = xr.world_size(), xr.global_ordinal(), xr.local_ordinal()
    scaler = torch.amp.GradScaler("xla")
    other = torch.amp.GradScaler("cuda")
    torch_xla.sync(wait=True)

torch_xla.launch(_mp_fn, debug_single_process=True)
"""


def test_legacy_target_rewrites_api_that_1_13_lacks():
    found = findings(MODERN_CODE, "XLA501", target="legacy")
    assert len(found) == 8
    assert all(f.severity == Severity.ERROR and "1.13" in f.message for f in found)
    assert fixed(MODERN_CODE, "XLA501", target="legacy") == src(
        """
        import torch
        import torch_xla
        import torch_xla.core.xla_model as xm
        import torch_xla.amp
        import torch_xla.distributed.xla_multiprocessing as xmp

        def _mp_fn(index):
            xm.set_rng_state(0)
            device = xm.xla_device()
            n, r, l = xm.xrt_world_size(), xm.get_ordinal(), xm.get_local_ordinal()
            scaler = torch_xla.amp.GradScaler()
            other = torch.amp.GradScaler("cuda")
            xm.mark_step(wait=True)

        xmp.spawn(_mp_fn, nprocs=1)
        """
    )


def test_legacy_runtime_import_with_unmapped_use_is_manual():
    code = """
    from torch_xla import runtime as rt

    kind = rt.device_type()
    n = rt.world_size()
    """
    imp, call = findings(code, "XLA501", target="legacy")
    assert imp.span.start.line == 0 and imp.fix is None and "1.13" in imp.message
    assert "xm.xrt_world_size()" in fixed(code, "XLA501", target="legacy")
    assert "from torch_xla import runtime as rt" in fixed(code, "XLA501", target="legacy")


def test_modern_code_reports_nothing_on_the_modern_target():
    assert findings(MODERN_CODE, "XLA501") == []


def test_aliases_are_followed_and_unmappable_arguments_are_manual():
    code = """
    from torch_xla.core.xla_model import xla_device
    from torch_xla.distributed import xla_multiprocessing

    dev = xla_device(devkind="TPU")
    xla_multiprocessing.spawn(fn, nprocs=None, join=False)
    xla_multiprocessing.spawn(fn, nprocs=8)
    """
    dev, spawn = findings(code, "XLA501")
    assert dev.fix is None and "torch_xla.device()" in dev.manual
    assert spawn.fix is None and "torch_xla.launch" in spawn.manual
    # nprocs=8 raises on 2.x: XLA502 says so, not "still works" here.
    (refused,) = findings(code, "XLA502")
    assert refused.span.start.line == spawn.span.start.line + 1


def test_xla_gpu_era_environment_variables_on_the_modern_target():
    code = """
    import os
    from os import environ

    os.environ["PJRT_DEVICE"] = "GPU"
    environ["GPU_NUM_DEVICES"] = "8"
    os.environ.setdefault("XLA_USE_BF16", "1")
    os.environ["PJRT_DEVICE"] = "TPU"
    os.environ["CPU_NUM_DEVICES"] = "2"
    """
    found = findings(code, "XLA501")
    assert [f.span.start.line for f in found] == [3, 4, 5]
    assert all(f.fix is None for f in found)
    assert "removed in 2.9" in found[0].manual
    assert "torch.autocast" in found[2].manual
    # SageMaker Training Compiler (the legacy target) still runs XLA on GPUs.
    assert findings(code, "XLA501", target="legacy") == []


def test_hover_states_both_dialects():
    hover = get_rule("XLA501").hover
    text = hover["torch_xla.core.xla_model.mark_step"]
    assert "torch_xla.sync()" in text and "xm.mark_step()" in text
    assert "torch_xla.core.xla_model.xla_device" in hover
