"""Lightning Fabric / Trainer scripts are device-agnostic (GUIDE I): Fabric picks the device,
its set-up loaders mark the steps on XLA, and torch_xla code written into the script would
break its CUDA/CPU runs. XLA107 and XLA111 stay quiet there; XLA401 keeps an every-step read
as a note without a fix and leaves periodic logging reads alone. A script that merely imports
lightning (seed_everything beside a hand-written CUDA loop) is still converted."""

from __future__ import annotations

from xla_lens.engine import analyze
from xla_lens.rules.base import Severity
from xla_lens.semantic.frameworks import ownership

from tests.helpers import findings, fixed, src

FABRIC = """
import torch
import lightning as L

def main():
    fabric = L.Fabric(accelerator="auto", devices="auto")
    model = torch.compile(torch.nn.Linear(8, 1))
    opt = torch.optim.AdamW(model.parameters())
    model, opt = fabric.setup(model, opt)
    data = torch.utils.data.DataLoader(torch.randn(64, 8), batch_size=8, drop_last=True)
    loader = fabric.setup_dataloaders(data)
    for i, x in enumerate(loader):
        loss = model(x).pow(2).mean()
        fabric.backward(loss)
        opt.step()
        opt.zero_grad()
        {read}

if __name__ == "__main__":
    main()
"""

PLAIN = """
import torch
from lightning import seed_everything

seed_everything(0)
model = torch.compile(torch.nn.Linear(8, 1).cuda())
opt = torch.optim.AdamW(model.parameters())
for step in range(10):
    x = torch.randn(8, 8, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def test_fabric_script_is_device_agnostic():
    model = analyze(src(FABRIC.format(read="pass"))).model
    assert ownership(model).device_agnostic == "Lightning Fabric"


def test_fabric_loop_gets_no_sync_and_no_compile_backend():
    code = FABRIC.format(read="pass")
    assert findings(code, "XLA107") == []
    assert findings(code, "XLA111") == []
    assert "torch_xla" not in fixed(code, unsafe=True)


def test_fabric_passed_in_by_annotation():
    code = """
    import lightning as L

    def fit(fabric: L.Fabric, model, opt, loader):
        for x in loader:
            loss = model(x).sum()
            fabric.backward(loss)
            opt.step()
    """
    assert findings(code, "XLA107") == []


def test_periodic_logging_read_is_quiet():
    code = FABRIC.format(read='if i % 10 == 0: print(f"{loss.item():.3f}")')
    assert findings(code, "XLA401") == []


def test_every_step_read_is_a_note_without_fix():
    (f,) = findings(FABRIC.format(read="print(loss.item())"), "XLA401")
    assert f.severity == Severity.INFORMATION
    assert f.fix is None and "Lightning Fabric" in (f.manual or "")


def test_lightning_import_alone_is_not_device_agnostic():
    assert ownership(analyze(src(PLAIN)).model).device_agnostic is None
    assert findings(PLAIN, "XLA107")
    assert findings(PLAIN, "XLA111")


def test_other_torch_xla_fixes_become_advice_to_use_the_framework_device():
    code = """
    import torch
    import lightning as L

    fabric = L.Fabric(accelerator="auto")
    weights = torch.ones(1).cuda()
    """
    (f,) = findings(code, "XLA101")
    assert f.fix is None and "fabric.device" in (f.manual or "")
    assert "torch_xla" not in fixed(code, unsafe=True)


def test_pin_memory_of_a_fabric_loader_is_left_alone():
    # Held-out 13 (lit-llama finetune/lora.py): the same script runs on CUDA, where pinning
    # helps; on an XLA host the DataLoader only warns.
    code = FABRIC.format(read="pass").replace("drop_last=True", "drop_last=True, pin_memory=True")
    assert findings(code, "XLA403") == []


def test_a_fabric_script_bound_to_torch_xla_is_no_longer_device_agnostic():
    """moshi-finetune (held-out 96): a Fabric script that imports torch_xla at its top level
    and uses torch_xla's own FSDP runs on XLA only; "torch_xla code would break its CUDA/CPU
    runs" is false there, and its deprecated ``xm.mark_step()`` gets torch_xla.sync()."""
    bound = FABRIC.format(read="xm.mark_step()").replace(
        "import lightning as L\n",
        "import lightning as L\nimport torch_xla.core.xla_model as xm\n"
        "import torch_xla.distributed.fsdp.xla_fully_sharded_data_parallel as fsdp_internal\n",
    )
    model = analyze(src(bound)).model
    assert ownership(model).device_agnostic is None
    (f,) = findings(bound, "XLA501")
    assert f.fix is not None and "Lightning Fabric picks" not in (f.manual or "")
    # Only under a guard (the script also runs without torch_xla), Fabric still decides.
    guarded = bound.replace(
        "import torch_xla.core.xla_model as xm\n",
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n",
    ).replace(
        "import torch_xla.distributed.fsdp.xla_fully_sharded_data_parallel as fsdp_internal\n", ""
    )
    assert ownership(analyze(src(guarded)).model).device_agnostic == "Lightning Fabric"
