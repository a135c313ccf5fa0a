"""XLA115 on a map_location callable that moves each storage onto CUDA
(``lambda storage, loc: storage.cuda(torch.cuda.current_device())``, KAIR's optimizer reload,
held-out 31). XLA101 rewrote the move as ``storage.to(torch_xla.device())``, a safe fix that
made the load raise TypeError (a storage's ``to`` takes its device by keyword only, and
torch.load cannot restore a storage onto the XLA device anyway). Loading on the CPU is the
fix; ``optimizer.load_state_dict`` copies the state onto the parameters' device."""

import io

import pytest
import torch

from tests.helpers import findings, fixed

RELOAD = """
import torch

def load_optimizer(path, optimizer):
    optimizer.load_state_dict(torch.load(path, map_location=MOVER))
"""

MOVERS = [
    "lambda storage, loc: storage.cuda(torch.cuda.current_device())",
    "lambda storage, loc: storage.cuda()",
    'lambda s, l: s.to("cuda")',
]


@pytest.mark.parametrize("mover", MOVERS)
def test_a_storage_mover_loads_on_the_cpu_instead(mover: str) -> None:
    code = RELOAD.replace("MOVER", mover)
    assert findings(code, "XLA101") == []
    (f,) = findings(code, "XLA115")
    assert f.fix is not None and f.fix.safe
    assert "each storage onto CUDA" in f.message
    assert 'torch.load(path, map_location="cpu"))' in fixed(code)


def test_kept_as_a_checkpoint_dict_the_fix_needs_review() -> None:
    code = """
    import torch

    def resume(path, model):
        ckpt = torch.load(path, map_location=lambda storage, loc: storage.cuda())
        model.load_state_dict(ckpt["model"])
        return ckpt["ema"]
    """
    (f,) = findings(code, "XLA115")
    assert f.fix is not None and not f.fix.safe


def test_a_callable_that_does_not_move_the_storage_is_left_alone() -> None:
    code = RELOAD.replace("MOVER", "lambda storage, loc: storage")
    assert findings(code, "XLA115") == []


def test_the_original_rewrite_really_fails_to_load() -> None:
    """Why XLA101 must not rewrite the move: a storage's ``to`` rejects a positional device."""
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buffer)
    buffer.seek(0)
    with pytest.raises(TypeError):
        torch.load(buffer, map_location=lambda storage, loc: storage.to(torch.device("cpu")))
