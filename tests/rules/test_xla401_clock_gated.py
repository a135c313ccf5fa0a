"""XLA401, held-out 14 (vicreg): a read under a wall-clock gate (``if now - last_log > 60:``)
runs every so many seconds, not every step, and the message says so."""

from tests.helpers import findings, src

CLOCK = src("""
import time
import torch
import torch.nn as nn

model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
last_log = time.time()
for step in range(1000):
    loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    now = time.time()
    if now - last_log > 60:
        print({"step": step, "loss": loss.item()})
        last_log = now
""")


def test_a_clock_gated_read_is_periodic():
    (f,) = findings(CLOCK, "XLA401")
    assert "every step that runs the periodic block on line 12" in f.message


def test_an_ungated_read_is_every_step():
    plain = CLOCK.replace("    if now - last_log > 60:\n", "    if True:\n")
    (f,) = findings(plain, "XLA401")
    assert "periodic block" not in f.message and "every step" in f.message


def test_a_script_helper_that_tests_a_modulo_gates_like_the_modulo():
    # lucidrains' trainers: `if divisible_by(self.step, self.save_every):` with
    # `def divisible_by(numer, denom): return (numer % denom) == 0`.
    code = """
    import torch
    def divisible_by(numer, denom):
        return (numer % denom) == 0
    def train(model, loader, opt):
        for step, (x, y) in enumerate(loader):
            loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
            loss.backward()
            opt.step()
            if divisible_by(step, 100):
                print(loss.item())
    """
    (f,) = findings(code, "XLA401")
    assert "every step that runs the periodic block on line 9" in f.message


def test_a_read_on_the_last_batch_only_is_periodic():
    # yolov5's classify/train.py (held-out 38): ``if i == len(trainloader) - 1:`` validates at
    # the end of each epoch, not every step.
    code = """
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for i, x in enumerate(loader):
            loss = model(x.cuda()).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
            if LAST:
                print("epoch loss", loss.item())
    """
    for last in ("i == len(loader) - 1", "i + 1 == len(loader)"):
        (f,) = findings(code.replace("LAST", last), "XLA401")
        assert "periodic block" in f.message, last
    # ``i`` is no counter name xla-lens knows: a fixed step of it is not taken as one.
    (f,) = findings(code.replace("LAST", "i == 3"), "XLA401")
    assert "periodic block" not in f.message


def test_a_block_on_the_first_step_only_is_no_every_step_read():
    # AnimateDiff (held-out 43): ``if epoch == first_epoch and step == 0:`` dumps the first
    # batch once; a counter compared with 0 runs its block once, not every step.
    code = """
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for step, x in enumerate(loader):
            loss = model(x.cuda()).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
            if FIRST:
                print("first loss", loss.item())
    """
    for first in ("step == 0", "epoch == 0 and step == 0", "0 == global_step", "step == 1"):
        (f,) = findings(code.replace("FIRST", first), "XLA401")
        assert "periodic block" in f.message, first
    for other in ("loss_scale == 0", "step == -1"):
        (f,) = findings(code.replace("FIRST", other), "XLA401")
        assert "periodic block" not in f.message, other


FLAGGED_STEP = """
import torch

def update_weights(model, batch, opt, vis_result=False):
    x, y = batch
    loss = (model(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if vis_result:
        print(loss.item())
    return loss

def train(model, loader, opt, vis_interval):
    model.cuda()
    for step_count, (x, y) in enumerate(loader):
        if step_count % vis_interval == 0:
            vis_result = True
        else:
            vis_result = False
        update_weights(model, (x.cuda(), y.cuda()), opt, vis_result)
"""


def test_a_flag_the_caller_sets_every_few_steps_gates_the_step_functions_read():
    # EfficientZero (held-out 133): `update_weights(..., vis_result)` with `vis_result = True`
    # only under `if step_count % config.vis_interval == 0:`.
    (f,) = findings(FLAGGED_STEP, "XLA401")
    assert "every step that runs the periodic block on line 16" in f.message
    direct = FLAGGED_STEP.replace(
        "opt, vis_result)", "opt, vis_result=step_count % vis_interval == 0)"
    )
    (f,) = findings(direct, "XLA401")
    assert "every step that runs the periodic block on line 9" in f.message
    # A flag the caller may set on any step is no periodic gate.
    anyway = FLAGGED_STEP.replace("vis_result = False", "vis_result = step_count > 2")
    (f,) = findings(anyway, "XLA401")
    assert "periodic block" not in f.message
