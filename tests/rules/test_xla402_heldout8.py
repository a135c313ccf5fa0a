"""XLA402, held-out 8: a data-dependent op in a generator the loop iterates (hlb-CIFAR10's
per-epoch crop), the short-batch wording (compiled once, then cached), and an evaluation
loader that keeps its short last batch on purpose (deit)."""

from xla_lens.rules.base import Severity

from tests.helpers import findings, fixed, src

GENERATOR_CROP = """
import torch

def crop(images, size):
    mask = torch.rand(images.shape, device=images.device) > 0.5
    return torch.masked_select(images, mask).view(images.shape[0], -1)

def batches(images, targets, bs):
    cropped = crop(images, 24)
    for i in range(len(cropped) // bs):
        yield cropped[i * bs:(i + 1) * bs], targets[i * bs:(i + 1) * bs]

for epoch in range(3):
    for x, y in batches(images, targets, 64):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
"""


def test_masked_select_in_a_helper_of_the_loops_generator_is_found():
    (f,) = findings(GENERATOR_CROP, "XLA402")
    assert f.span.start.line == 4  # 0-based: the masked_select line
    assert "masked_select" in f.message
    assert f.fix is None and f.manual
    # Wording true to where it runs: the generator's body before the yields runs once per
    # epoch, not once per step.
    assert "per epoch" in f.message or "each epoch" in f.message


def test_helper_called_from_the_step_is_found():
    code = """
    import torch

    def pick(logits, labels):
        keep = labels >= 0
        return logits[keep], labels[keep]

    for x, y in loader:
        out, lab = pick(model(x), y)
        loss = loss_fn(out, lab)
        loss.backward()
        optimizer.step()
    """
    found = findings(code, "XLA402")
    assert [f.span.start.line for f in found] == [4, 4]
    assert all("boolean-mask" in f.message for f in found)


def test_helper_not_called_from_the_loop_is_left_alone():
    code = """
    import torch

    def report(t):
        return torch.nonzero(t)

    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    print(report(w))
    """
    assert findings(code, "XLA402") == []


def test_short_last_batch_message_says_it_compiles_once():
    code = """
    import torch
    loader = torch.utils.data.DataLoader(ds, batch_size=32)
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
    """
    (f,) = findings(code, "XLA402")
    # Measured on PJRT CPU (10 samples, batch 4, 3 epochs): 2 compiles in epoch 0, none after.
    assert "every epoch" not in f.message
    assert "once" in f.message and "cache" in f.message


def test_eval_loader_with_explicit_drop_last_false_is_information_without_fix():
    code = """
    import torch
    train_loader = torch.utils.data.DataLoader(train_ds, batch_size=32, drop_last=True)
    val_loader = torch.utils.data.DataLoader(val_ds, batch_size=48, drop_last=False)
    for epoch in range(3):
        for x, y in train_loader:
            loss = model(x, y)
            loss.backward()
            optimizer.step()
        evaluate(val_loader, model)
    """
    (f,) = findings(code, "XLA402")
    assert f.span.start.line == 2
    assert f.severity == Severity.INFORMATION
    assert f.fix is None
    assert "once" in f.message and "pad" in f.manual
    assert fixed(code, "XLA402", unsafe=True) == src(code)


def test_eval_loader_without_drop_last_is_not_reported():
    code = """
    import torch
    train_loader = torch.utils.data.DataLoader(train_ds, batch_size=32, drop_last=True)
    val_loader = torch.utils.data.DataLoader(val_ds, batch_size=48)
    for x, y in train_loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
    """
    assert findings(code, "XLA402") == []


def test_eval_loader_in_a_file_whose_loop_is_elsewhere_is_found_by_its_name():
    # deit: main.py builds the loaders, engine.py holds the loops.
    code = """
    import torch
    data_loader_train = torch.utils.data.DataLoader(dataset_train, batch_size=32, drop_last=True)
    data_loader_val = torch.utils.data.DataLoader(dataset_val, batch_size=48, drop_last=False)
    other = torch.utils.data.DataLoader(ds, batch_size=48, drop_last=False)
    train_one_epoch(model, data_loader_train)
    evaluate(data_loader_val, model)
    """
    (f,) = findings(code, "XLA402")
    assert f.span.start.line == 2 and f.severity == Severity.INFORMATION


CLASS_LOADER = """
import torch

def random_shift(images, r=2):
    shifts = torch.randint(-r, r + 1, (len(images),), device=images.device)
    out = torch.empty_like(images)
    for s in range(-r, r + 1):
        m = shifts == s
        out[m] = images[m].roll(s, dims=-1)
    return out

class DeviceLoader:
    def __init__(self, x, y, bs):
        self.x, self.y, self.bs = x, y, bs

    def __iter__(self):
        x = random_shift(self.x)
        for i in range(0, len(x), self.bs):
            yield x[i:i + self.bs], self.y[i:i + self.bs]

loader = DeviceLoader(images, labels, 64)
for epoch in range(3):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
"""


def test_mask_ops_in_a_script_loaders_iter_helper_are_found():
    # Held-out 14 (airbench): the loop iterates an instance of the script's own loader class.
    found = findings(CLASS_LOADER, "XLA402")
    assert found and all("DeviceLoader(...)" in f.message for f in found)
