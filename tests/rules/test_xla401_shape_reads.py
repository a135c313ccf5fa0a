"""XLA401's advice for a read whose value sets a shape later in the loop (rnn-transducer,
held-out 159: ``max_len = lengths.max().item()`` then ``inputs[:, :max_len]``): the host needs
it before tracing can go on, so the usual advice (a step closure, a read after the loop) cannot
work; the read should come from the CPU batch and the lengths be padded or bucketed."""

from tests.helpers import findings

SLICED = """
import torch

def train(model, loader, optimizer):
    model.to("cuda")
    for inputs, lengths in loader:
        inputs, lengths = inputs.cuda(), lengths.cuda()
        max_len = lengths.max().item()
        inputs = inputs[:, :max_len]
        loss = model(inputs).sum()
        loss.backward()
        optimizer.step()
"""


def test_a_read_that_slices_the_batch_gets_the_dynamic_shape_advice():
    (f,) = findings(SLICED, "XLA401")
    assert f.fix is None
    assert "sets a shape (line 8: `inputs = inputs[:, :max_len]`)" in f.manual
    assert "before the batch moves to the device" in f.manual
    assert "add_step_closure" not in f.manual


def test_a_size_argument_counts_and_a_logged_value_does_not():
    sized = SLICED.replace("inputs = inputs[:, :max_len]", "mask = torch.zeros(max_len)")
    (f,) = findings(sized, "XLA401")
    assert "sets a shape (line 8: `mask = torch.zeros(max_len)`)" in f.manual
    logged = SLICED.replace("inputs = inputs[:, :max_len]", "history.append(max_len)")
    (g,) = findings(logged, "XLA401")
    assert "sets a shape" not in (g.manual or "")
