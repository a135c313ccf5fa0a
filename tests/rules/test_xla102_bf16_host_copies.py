"""XLA102's bfloat16 fix of a float16 CUDA autocast whose outputs go to the host (whisper-at's
``validate``, held-out 103): the predictions are copied with ``.to('cpu')`` and end in NumPy,
which takes float16 but not bfloat16. The fix then waits for review; a loss read with
``.item()`` (one number, either type) keeps it safe."""

import pytest
import torch

from tests.helpers import findings, fixed, src


def _autocasts(code: str) -> list:
    """The autocast findings (not the information finding at a CUDA AMP import line)."""
    return [f for f in findings(code, "XLA102") if "imports from CUDA's AMP" not in f.message]


VALIDATE = """
import numpy as np
import torch
from torch.cuda.amp import autocast

device = torch.device("cuda")

def validate(model, loader):
    predictions, losses = [], []
    with torch.no_grad():
        for x, y in loader:
            x = x.to(device)
            with autocast():
                out = model(x)
            predictions.append(out.to("cpu").detach())
            losses.append(torch.nn.functional.mse_loss(out, y.to(device)).cpu().item())
    return np.argmax(torch.cat(predictions).numpy(), 1), np.mean(losses)

def train_step(model, x, y, opt):
    with autocast():
        loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.cpu().item()
"""


def test_numpy_takes_float16_but_not_bfloat16():
    # The fact the review rests on, on this torch.
    assert torch.zeros(2, dtype=torch.float16).numpy().dtype.name == "float16"
    with pytest.raises(TypeError, match="BFloat16"):
        torch.zeros(2, dtype=torch.bfloat16).numpy()


def test_an_autocast_whose_outputs_are_copied_to_the_host_needs_review():
    validate, step = _autocasts(VALIDATE)[:2]
    assert not validate.fix.safe
    assert "`out`, computed under this autocast, goes to the host on line 14" in (
        validate.fix.review_reason
    )
    assert "add `.float()` before the copy" in validate.fix.review_reason
    assert step.fix.safe, step.fix.review_reason  # `.cpu().item()`: one number
    out = fixed(VALIDATE, "XLA102")
    assert out.count('torch.autocast("xla", dtype=torch.bfloat16)') == 1
    assert "            with autocast():\n" in out


def test_a_float16_autocast_kept_as_float16_changes_no_dtype():
    code = VALIDATE.replace("with autocast():", "with autocast(dtype=torch.float16):")
    (first, *_) = _autocasts(code)
    assert "NumPy" not in (first.fix.review_reason or "")
    assert src(code) != fixed(code, "XLA102")


def test_a_host_copy_in_a_file_without_numpy_stays_a_torch_tensor():
    """Held-out 150's TabPFN: ``losses.mean(1).cpu()`` summed into a torch accumulator, in a
    file that never hands a value to NumPy: bfloat16 works there as float16 did."""
    code = VALIDATE.replace("import numpy as np\n", "").replace(
        "    return np.argmax(torch.cat(predictions).numpy(), 1), np.mean(losses)\n",
        "    return torch.cat(predictions).argmax(1), sum(losses) / len(losses)\n",
    )
    validate, step = _autocasts(code)[:2]
    assert validate.fix.safe and step.fix.safe, validate.fix.review_reason
