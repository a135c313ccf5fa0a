"""XLA401's advice for a read that an ``if`` or ``while`` in the training loop tests (pysot,
held-out 100: ``if is_valid_number(loss.data.item()):`` around the backward and the step).
The value decides which steps train, so the usual advice (read after the loop, or in a step
closure) would change the program; a test around a print alone can still move whole."""

from tests.helpers import findings

GATED = """
import torch

def train(model, loader, optimizer):
    model.to("cuda")
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = torch.nn.functional.mse_loss(model(x), y)
        if is_valid_number(loss.data.item()):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_a_read_that_decides_whether_the_step_runs_gets_no_deferral_advice():
    (f,) = findings(GATED, "XLA401")
    assert f.fix is None
    assert "decides what the loop does next (`is_valid_number(loss.data.item())`)" in f.manual
    assert "add_step_closure" not in f.manual and "after the loop" in f.manual


def test_a_read_that_stops_the_loop_decides_too():
    code = GATED.replace(
        "        if is_valid_number(loss.data.item()):\n",
        "        loss.backward()\n        optimizer.step()\n        if loss.item() < 0.01:\n"
        "            break\n        if True:\n",
    )
    (f,) = findings(code, "XLA401")
    assert "decides what the loop does next (`loss.item() < 0.01`)" in f.manual


def test_a_test_around_a_print_keeps_the_deferral_advice():
    code = GATED.replace(
        "        if is_valid_number(loss.data.item()):\n            optimizer.zero_grad()\n",
        "        optimizer.zero_grad()\n        if True:\n",
    ).replace(
        "            optimizer.step()\n",
        "            optimizer.step()\n        if loss.item() > 10:\n            print('high')\n",
    )
    (f,) = findings(code, "XLA401")
    assert "add_step_closure" in f.manual and "decides" not in f.manual


def test_an_image_of_a_device_tensor_written_every_step_is_a_read():
    """animeface's CycleGAN (held-out 105) writes ``save_image(fake, "running.jpg")`` each
    step: torchvision copies the grid to the host first, a sync per step."""
    code = """
    import torch
    from torchvision.utils import save_image

    model = torch.nn.Linear(4, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        fake = model(x.cuda())
        loss = fake.pow(2).mean()
        loss.backward()
        opt.step()
        save_image(fake, "running.jpg")
    """
    (f,) = findings(code, "XLA401")
    assert "writing an image of a tensor" in f.message
