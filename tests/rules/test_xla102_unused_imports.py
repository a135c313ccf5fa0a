"""XLA102: an import of CUDA's AMP that the conversion left unused goes in a later round."""

from xla_lens.engine import fix_source

from tests.helpers import findings, src

AMP_SCRIPT = """
import torch
from torch.cuda.amp import GradScaler, autocast  # mixed precision

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = GradScaler()
for step in range(3):
    with autocast():
        loss = model(torch.randn(8, 4, device=device)).sum()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def _unused(code: str) -> list:
    return [f for f in findings(code, "XLA102") if "is unused now" in f.message]


def test_convert_removes_the_cuda_amp_import_its_fixes_left_unused():
    out = fix_source(src(AMP_SCRIPT)).source
    assert "torch.cuda.amp" not in out and "GradScaler" not in out
    assert 'torch.autocast("xla", dtype=torch.bfloat16)' in out
    # Applying everything again changes nothing.
    assert fix_source(out).source == out


def test_the_original_cuda_script_is_not_told_about_its_import():
    assert _unused(AMP_SCRIPT) == []


def test_an_import_still_used_stays():
    code = """
    import torch
    import torch_xla
    from torch.cuda.amp import GradScaler, autocast
    scaler = GradScaler()
    """
    assert _unused(code) == []


def test_module_alias_and_reexports():
    alias = """
    import torch
    import torch_xla
    import torch.cuda.amp as amp
    x = torch.zeros(2, device=torch_xla.device())
    """
    (f,) = _unused(alias)
    assert f.fix.safe and f.span.start.line == 2
    exported = alias + "__all__ = ['amp']\n"
    assert _unused(exported) == []


def test_a_script_written_for_xla_by_hand_is_left_alone():
    code = """
    import torch
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.metrics as met
    import torch_xla.distributed.parallel_loader as pl
    from torch.cuda.amp import autocast
    def train(loader, device):
        for x in pl.MpDeviceLoader(loader, device):
            xm.optimizer_step(None)
        print(met.metrics_report())
    """
    assert _unused(code) == []
