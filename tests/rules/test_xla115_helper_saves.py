"""XLA115: a checkpoint written through a save helper of the project (rnn-transducer's
``save_model(model, optimizer, config, name)`` in ``rnnt/utils.py``, held-out 159) makes the
script one that saves checkpoints, so its ``torch.load(path)`` without map_location reads a
file the CUDA version wrote."""

from __future__ import annotations

from pathlib import Path

from xla_lens.engine import analyze
from xla_lens.semantic.workspace import clear_cache

from tests.helpers import src

HELPER = """
import torch

def save_model(model, optimizer, name):
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save(checkpoint, name)
"""

SCRIPT = """
import torch
from utils import save_model

model = torch.nn.Linear(4, 2).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
if args.resume:
    checkpoint = torch.load(args.resume)
    model.load_state_dict(checkpoint["model"])
for epoch in range(3):
    for x in loader:
        model(x.cuda()).sum().backward()
        optimizer.step()
    save_model(model, optimizer, f"epoch{epoch}.pt")
"""


def _xla115(tmp_path: Path, helper: str) -> list:
    (tmp_path / "utils.py").write_text(src(helper))
    script = tmp_path / "train.py"
    script.write_text(src(SCRIPT))
    clear_cache()
    result = analyze(script.read_text(), str(script))
    return [f for f in result.findings if f.code == "XLA115"]


def test_a_load_in_a_script_saving_through_a_project_helper_loads_on_the_cpu(tmp_path: Path):
    (f,) = _xla115(tmp_path, HELPER)
    assert f.span.start.line == 6 and "CUDA version of this script" in f.message
    assert f.fix is not None and f.fix.safe


def test_a_helper_that_writes_no_checkpoint_does_not_count(tmp_path: Path):
    plain = HELPER.replace(
        "torch.save(checkpoint, name)", 'open(name, "w").write(str(len(checkpoint)))'
    )
    assert _xla115(tmp_path, plain) == []
