"""XLA107 with a GradScaler handed to the epoch function (held-out 49's FreeYOLO: engine.py's
``train_one_epoch(..., optimizer, scaler)`` loops over the batches with
``scaler.scale(loss).backward()`` and ``scaler.step(optimizer)``): the function loops over the
steps itself, so its loop gets the sync and the caller's epoch loop none."""

from tests.helpers import findings

CODE = """
import torch


def train_one_epoch(model, loader, optimizer, scaler):
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()


def main(model, loader, epochs, scaler):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        train_one_epoch(model, loader, optimizer, scaler)
"""


def test_the_batch_loop_gets_the_sync_and_the_epoch_loop_none():
    lines = [f.span.start.line for f in findings(CODE, "XLA107")]
    assert lines == [4]  # 0-based: the batch loop of train_one_epoch only
