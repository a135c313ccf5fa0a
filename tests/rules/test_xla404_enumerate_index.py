"""XLA404 stays quiet on ``enumerate``'s index when the enumerate is bound to a name first
(yolov5: ``pbar = enumerate(train_loader)``, maybe wrapped in ``tqdm``): the index is a Python
int, and so is anything computed from it with other ints."""

from tests.helpers import findings

LOOP = """
import torch
from tqdm import tqdm


def train(model, train_loader, optimizer, device, epochs, nw=100, rank=0):
    nb = len(train_loader)
    for epoch in range(epochs):
        pbar = enumerate(train_loader)
        {wrap}
        for i, (x, y) in pbar:
            ni = i + nb * epoch
            if ni <= nw:
                print("warmup")
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            if {test}:
                print("big")
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
"""


def _lines(code: str) -> list[int]:
    return [f.span.start.line for f in findings(code, "XLA404")]


def test_the_index_of_an_enumerate_bound_to_a_name_is_an_int():
    for wrap in ("pass", "if rank in {-1, 0}:\n            pbar = tqdm(pbar, total=nb)"):
        code = LOOP.format(wrap=wrap, test="False")
        assert _lines(code) == [], wrap


def test_the_batch_of_that_loop_and_a_loss_are_still_tensors():
    code = LOOP.format(wrap="pass", test="loss > 10")
    lines = _lines(code)
    assert len(lines) == 1
    code = LOOP.format(wrap="pass", test="x.sum() > 0")
    assert len(_lines(code)) == 1


def test_a_name_bound_to_something_else_as_well_is_not_trusted():
    code = LOOP.format(wrap="pbar = other(pbar)", test="False")
    assert len(_lines(code)) == 1
