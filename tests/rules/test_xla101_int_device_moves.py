"""XLA101 at a model placed on an integer CUDA index held in a variable
(``ema = deepcopy(model).to(device)`` after ``device = rank % torch.cuda.device_count()``):
reported where the model is placed, with the index's own fix, exactly as safe as it is."""

from tests.helpers import findings, fixed

HEAD = """
import torch
from copy import deepcopy
from torch import nn
from transformers import AutoModel

def main(rank):
    device = rank % torch.cuda.device_count()
    model = nn.Linear(4, 4)
"""


def _xla101(body: str):
    return findings(HEAD + body, "XLA101")


def _lines(fs):
    return [f.span.start.line + 1 for f in fs]


def test_an_ema_copy_placed_on_the_index_is_reported_with_the_index_fix():
    index, ema = _xla101("    ema = deepcopy(model).to(device)\n")
    assert _lines([index, ema]) == [7, 9]
    assert "places deepcopy(model) on a CUDA device number" in ema.message
    assert "line 7" in ema.message
    assert ema.fix.ops == index.fix.ops and ema.fix.safe
    out = fixed(HEAD + "    ema = deepcopy(model).to(device)\n", "XLA101")
    assert "    device = torch_xla.device()\n" in out
    assert "ema = deepcopy(model).to(device)" in out


def test_pretrained_and_class_built_models_are_placements_too():
    fs = _xla101(
        "    vae = AutoModel.from_pretrained('x').to(device)\n"
        "    net = nn.Sequential(model).to(device)\n"
    )
    assert _lines(fs) == [7, 9, 10]


def test_batches_moved_with_the_index_are_left_to_the_index_finding():
    fs = _xla101(
        "    x = torch.randn(2, 4).to(device)\n"
        "    for batch in range(3):\n"
        "        y = torch.tensor([batch]).to(device)\n"
    )
    assert _lines(fs) == [7]


def test_a_printed_index_makes_both_fixes_wait_for_review():
    fs = _xla101("    ema = deepcopy(model).to(device)\n    print(f'training on gpu {device}')\n")
    assert len(fs) == 2
    for f in fs:
        assert not f.fix.safe and "printed" in f.fix.review_reason
        assert "line 10" in f.fix.review_reason


def test_a_cuda_only_use_makes_both_fixes_wait_for_review():
    fs = _xla101("    torch.cuda.set_device(device)\n    ema = deepcopy(model).to(device)\n")
    assert len(fs) == 2
    assert all(not f.fix.safe and "torch.cuda.set_device" in f.fix.review_reason for f in fs)


def test_an_index_read_as_a_number_gets_no_fix_at_either_place():
    fs = _xla101(
        "    ema = deepcopy(model).to(device)\n    if device == 0:\n        print('first')\n"
    )
    assert len(fs) == 2 and all(f.fix is None and f.manual for f in fs)


def test_a_device_parameter_or_a_rebound_name_is_not_followed():
    code = """
import torch
from copy import deepcopy

def place(model, device):
    return deepcopy(model).to(device)

def main(rank, model):
    device = rank % torch.cuda.device_count()
    if rank:
        device = 0
    ema = deepcopy(model).to(device)
"""
    # Only the index itself: ``place``'s parameter and the rebound name are not followed.
    assert _lines(findings(code, "XLA101")) == [8]


def test_a_literal_index_move_becomes_the_device_variable():
    # Held-out 59's ATLOP: `model.to(0)` beside `device = torch.device("cuda:0" if ...)`.
    code = """
    import torch
    def main(model):
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        model.to(0)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        return optimizer
    def later(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model.to(0)
        return optimizer
    """
    moves = [f for f in findings(code, "XLA101") if ".to(0)" in f.message]
    assert [(f.span.start.line, f.fix.safe) for f in moves] == [(3, True), (8, False)]
    assert moves[0].fix.ops[0].code == "device"
    assert "optimizer built on line" in moves[1].fix.review_reason


def test_an_index_a_map_location_callable_moves_storages_onto_is_not_rewritten_safely():
    """BasicSR (held-out 79): ``device_id = torch.cuda.current_device()`` only feeds
    ``storage.cuda(device_id)`` in torch.load's map_location, which XLA101 leaves to XLA115;
    as the XLA device it raises TypeError (``storage.cuda`` takes a CUDA index)."""
    text = """
    import torch

    def resume(path, used):
        device_id = torch.cuda.current_device()
        state = torch.load(path, map_location=lambda storage, loc: storage.cuda(device_id))
        used(state["iter"])
        return state
    """
    (f,) = [f for f in findings(text, "XLA101") if f.span.start.line + 1 == 4]
    assert not f.fix.safe and "map_location" in f.fix.review_reason
    assert "torch_xla.device()" not in fixed(text, "XLA101")
