"""A model built from bitsandbytes' quantized layers (held-out 145's QLoRA: ``models/lora.py``
subclasses ``bnb.nn.Params4bit``/``Linear4bit``): bnb quantizes the weights on the move to
CUDA, so moving the model to XLA instead leaves them unquantized and the forward fails in
bnb's CUDA kernels. That move's fix waits for review and says why; tensor moves and scripts
that use bnb only for its 8-bit optimizer keep their safe fix."""

import pytest
from xla_lens.engine.analysis import analyze

from tests.helpers import findings, src

LORA = src("""
import bitsandbytes as bnb
import torch


class Linear4bit(bnb.nn.Linear4bit):
    pass


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = Linear4bit(8, 8)

    def forward(self, x):
        return self.proj(x)
""")

SCRIPT = src("""
import torch
from models.lora import Net

model = Net()
model = model.to('cuda')
x = torch.ones(2, 8).to('cuda')
loss = model(x).sum()
""")


def _move_findings(tmp_path, lora: str = LORA, script: str = SCRIPT):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "lora.py").write_text(lora)
    path = tmp_path / "train.py"
    path.write_text(script)
    found = [f for f in analyze(script, str(path)).findings if f.code == "XLA101"]
    lines = script.splitlines()
    return {lines[f.span.start.line].strip(): f for f in found}


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_the_move_of_a_model_of_bnb_layers_waits_for_review(tmp_path):
    found = _move_findings(tmp_path)
    move = found["model = model.to('cuda')"]
    assert move.fix is not None and not move.fix.safe
    assert "bitsandbytes (models/lora.py)" in move.fix.review_reason
    assert "stay unquantized" in move.message
    batch = found["x = torch.ones(2, 8).to('cuda')"]
    assert batch.fix is not None and batch.fix.safe


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_cuda_method_and_an_imported_layer_name_too(tmp_path):
    lora = LORA.replace(
        "import bitsandbytes as bnb\n", "from bitsandbytes.nn import Linear4bit as L4\n"
    )
    lora = lora.replace("class Linear4bit(bnb.nn.Linear4bit):", "class Linear4bit(L4):")
    script = SCRIPT.replace("model = model.to('cuda')", "model = model.cuda()")
    move = _move_findings(tmp_path, lora, script)["model = model.cuda()"]
    assert move.fix is not None and not move.fix.safe
    assert "bitsandbytes" in move.fix.review_reason


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_bnb_for_its_optimizer_only_keeps_the_safe_move(tmp_path):
    lora = LORA.replace("bnb.nn.Linear4bit", "torch.nn.Linear") + "\nOPT = bnb.optim.AdamW8bit\n"
    move = _move_findings(tmp_path, lora)["model = model.to('cuda')"]
    assert move.fix is not None and move.fix.safe


def test_layers_of_this_script():
    code = (
        "import bitsandbytes as bnb\n"
        + LORA.split("\n", 2)[2]
        + SCRIPT.replace("from models.lora import Net\n", "")
    )
    (move,) = [
        f for f in findings(code, "XLA101") if "model.to" in code.splitlines()[f.span.start.line]
    ]
    assert move.fix is not None and not move.fix.safe
    assert "bitsandbytes (this script)" in move.fix.review_reason
