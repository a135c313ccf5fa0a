"""XLA402, held-out 14 (modded-nanogpt): a data-dependent op in a batch generator, on the CPU
buffer the generator moves to the device only afterwards, runs on the host: XLA never traces
it. The same op on data already on the device is reported."""

from tests.helpers import findings, src

GENERATOR = src("""
import torch
import torch.nn as nn

def batches(tokens, n):
    pos = 0
    while True:
        buf = tokens[pos:pos + n + 1]
        inputs, targets = buf[:-1], buf[1:]
        starts = torch.nonzero(inputs == 0)[:, 0]
        yield inputs.to("cuda", non_blocking=True), targets.to("cuda"), starts.to("cuda")
        pos += n

emb = nn.Embedding(50, 50).cuda()
opt = torch.optim.SGD(emb.parameters(), lr=0.1)
for step in range(20):
    val = batches(tokens, 64)
    x, y, _ = next(val)
    loss = nn.functional.cross_entropy(emb(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
""")


def test_an_op_on_data_moved_to_the_device_afterwards_runs_on_the_host():
    assert findings(GENERATOR, "XLA402") == []


def test_the_op_after_the_move_is_reported():
    after = GENERATOR.replace(
        "        starts = torch.nonzero(inputs == 0)[:, 0]\n"
        '        yield inputs.to("cuda", non_blocking=True), targets.to("cuda"), starts.to("cuda")',
        '        inputs = inputs.to("cuda")\n'
        "        starts = torch.nonzero(inputs == 0)[:, 0]\n"
        '        yield inputs, targets.to("cuda"), starts',
    )
    assert "inputs = inputs.to" in after
    assert [f.code for f in findings(after, "XLA402")] == ["XLA402"]


METRICS = src("""
import torch
import torch.nn as nn


def clip_metrics(image_features, text_features, scale):
    per_image = (scale * image_features @ text_features.t()).detach().cpu()
    logits = {"image_to_text": per_image, "text_to_image": per_image.t()}
    truth = torch.arange(len(text_features)).view(-1, 1)
    ranks = {}
    for name, logit in logits.items():
        ranking = torch.argsort(logit, descending=True)
        ranks[name] = torch.where(ranking == truth)[1]
    return ranks


net = nn.Linear(8, 8).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(20):
    img = net(torch.randn(4, 8, device="cuda"))
    loss = img.pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    stats = clip_metrics(img, img, 1.0)
""")


def test_an_op_on_tensors_copied_to_the_cpu_runs_on_the_host():
    # CLIPA's get_clip_metrics (held-out 37): the logits go through .cpu() and a dict first.
    assert findings(METRICS, "XLA402") == []
    on_device = METRICS.replace(".detach().cpu()", ".detach()")
    assert [f.code for f in findings(on_device, "XLA402")] == ["XLA402"]


NUMPY_EVAL = """
import numpy as np
import torch


def validate(model, loader, lo, hi):
    errors = []
    for x, depth in loader:
        pred = model(x)
        pred = pred.squeeze().cpu().numpy()
        pred[pred < lo] = lo
        gt = depth.squeeze().cpu().numpy()
        valid = np.logical_and(gt > lo, gt < hi)
        errors.append(np.abs(gt[valid] - pred[valid]).mean())
    return errors


def train(model, loader, optimizer, lo, hi):
    for step, (x, depth) in enumerate(loader):
        loss = (model(x) - depth).abs().mean()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(validate(model, loader, lo, hi))
"""


def test_mask_ops_on_arrays_made_with_numpy_are_host_work():
    """Held-out 81, AdaBins' validate: ``pred = pred.squeeze().cpu().numpy()`` then
    ``pred[pred < lo] = lo``: numpy arrays, whatever ``pred`` held before."""
    assert findings(NUMPY_EVAL, "XLA402") == []
    moved_back = NUMPY_EVAL.replace(
        "        pred[pred < lo] = lo\n",
        "        if lo > 0:\n            pred = model(x)\n        pred[pred < lo] = lo\n",
    )
    # a branch between binds it to the model output: no longer provably a host array
    assert [f.span.start.line + 1 for f in findings(moved_back, "XLA402")] == [12, 15]


NUMPY_EVAL_IN_NO_GRAD = """
import numpy as np
import torch


def validate(model, loader, lo, hi, crop):
    errors = []
    for x, depth in loader:
        with torch.no_grad():
            pred = model(x)
            pred = pred.cpu().numpy().squeeze()
        if crop:
            padded = np.zeros((64, 64), dtype=np.float32)
            padded[:32, :32] = pred
            pred = padded
        pred[pred < lo] = lo
        pred[np.isnan(pred)] = hi
        errors.append(np.abs(depth.numpy() - pred).mean())
    return errors


def train(model, loader, optimizer, lo, hi):
    for step, (x, depth) in enumerate(loader):
        loss = (model(x) - depth).abs().mean()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(validate(model, loader, lo, hi, crop=True))
"""


def test_numpy_arrays_made_inside_a_with_block_and_a_host_crop_between():
    """Held-out 93, NeWCRFs' online_eval: ``pred = pred.cpu().numpy().squeeze()`` inside
    ``with torch.no_grad():`` (it runs whenever the mask op after it does), then a branch that
    rebinds it to another NumPy array (``np.zeros`` crop): host work, not XLA402."""
    assert findings(NUMPY_EVAL_IN_NO_GRAD, "XLA402") == []
    # The crop branch handing back a tensor again: no longer provably NumPy.
    tensor_crop = NUMPY_EVAL_IN_NO_GRAD.replace(
        "padded = np.zeros((64, 64), dtype=np.float32)", "padded = torch.zeros(64, 64)"
    )
    assert [f.span.start.line + 1 for f in findings(tensor_crop, "XLA402")] == [15]
