"""XLA101: device choices and moves are converted together. When one waits for review, a safe
`.cuda()` elsewhere would put the batch on XLA while the model stays on the CPU (dev corpus:
a DDP script whose model moves sit under an availability test, its batch moves do not)."""

from tests.helpers import findings, fixed, src

GUARDED_MODEL_PLAIN_BATCH = """
import torch

def main():
    model = torch.nn.Linear(4, 1)
    if not torch.cuda.is_available():
        print("using CPU, this will be slow")
    else:
        model.cuda()
    train(model)

def train(model):
    for _ in range(2):
        x = torch.randn(8, 4).cuda(non_blocking=True)  # the batch
        model(x).sum().backward()
"""


def test_a_batch_move_waits_while_the_model_move_waits():
    by_line = {f.span.start.line + 1: f for f in findings(GUARDED_MODEL_PLAIN_BATCH, "XLA101")}
    model_move, batch_move = by_line[8], by_line[13]
    assert model_move.fix is not None and not model_move.fix.safe
    assert batch_move.fix is not None and not batch_move.fix.safe
    assert "the device choice at line 8 waits for review" in batch_move.fix.review_reason
    assert "line 8 waits for review" in batch_move.message
    # Convert/fix applies neither: the script is left as it was, not half on XLA.
    assert fixed(GUARDED_MODEL_PLAIN_BATCH, "XLA101") == src(GUARDED_MODEL_PLAIN_BATCH)


def test_moves_stay_safe_when_nothing_waits():
    code = """
    import torch
    model = torch.nn.Linear(4, 1).cuda()
    x = torch.randn(8, 4).cuda()
    """
    fixes = [f.fix for f in findings(code, "XLA101")]
    assert len(fixes) == 2 and all(f is not None and f.safe for f in fixes)
    assert ".cuda()" not in fixed(code, "XLA101")


def test_an_elif_of_another_picker_does_not_hold_a_picker_back():
    code = """
    import torch
    DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    def get_device():
        if torch.cuda.is_available():
            dev = "cuda"
        elif torch.backends.mps.is_available():
            dev = "mps"
        else:
            dev = "cpu"
        return dev
    model = torch.nn.Linear(4, 1).to(DEVICE)
    x = torch.randn(8, 4).to(get_device())
    """
    fixes = [f.fix for f in findings(code, "XLA101")]
    assert len(fixes) == 2 and all(f is not None and f.safe for f in fixes), fixes
    out = fixed(code, "XLA101")
    assert "is_available" not in out and "mps" not in out
