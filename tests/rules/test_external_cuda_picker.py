"""The device comes from a helper of another module that picks CUDA first (held-out 151's
vocoder: ``device = get_device()``): the script's CUDA run saved CUDA tensors, so its own
``torch.load`` without map_location is reported (XLA115) though no "cuda" is written in the
file; and ``.to(get_device())`` gets one XLA101 finding naming the helper's picker line,
not two."""

import pytest
from xla_lens.engine.analysis import analyze

from tests.helpers import src

HELPER = src("""
import torch


def get_device():
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
""")

RESUME = src("""
import torch
from helper import get_device


def main(path):
    device = get_device()
    model = torch.nn.Linear(2, 2).to(device)
    model.load_state_dict(torch.load(path))
    torch.save(model.state_dict(), path)
""")


def _findings(tmp_path, text: str, code: str):
    (tmp_path / "helper.py").write_text(HELPER)
    path = tmp_path / "train.py"
    path.write_text(text)
    return [f for f in analyze(text, str(path)).findings if f.code == code]


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_a_checkpoint_of_a_helper_picked_cuda_run_loads_on_the_cpu(tmp_path):
    (load,) = _findings(tmp_path, RESUME, "XLA115")
    assert load.fix is not None and load.fix.safe
    assert "CUDA version of this script" in load.message


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_a_helper_without_cuda_gives_no_load_finding(tmp_path):
    (tmp_path / "helper.py").write_text("import torch\n\n\ndef get_device():\n    return 'cpu'\n")
    path = tmp_path / "train.py"
    path.write_text(RESUME)
    assert not [f for f in analyze(RESUME, str(path)).findings if f.code == "XLA115"]


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_one_finding_for_a_move_to_the_helpers_device(tmp_path):
    text = "import torch\nfrom helper import get_device\n\nmodel = torch.nn.Linear(2, 2).to(get_device())\n"
    (move,) = _findings(tmp_path, text, "XLA101")
    assert "picks the device in another module (helper.py:5)" in move.message
