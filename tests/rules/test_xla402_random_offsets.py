"""XLA402 on slices whose bounds a helper of the script draws at random each step (held-out 19
r3, CutMix-PyTorch's rand_bbox: a box of random place and size, a new graph per box)."""

from tests.helpers import findings

CUTMIX = """
import numpy as np
import torch


def rand_box(size, lam):
    w, h = size[2], size[3]
    cut = np.sqrt(1.0 - lam)
    cx, cy = np.random.randint(w), np.random.randint(h)
    x1, y1 = np.clip(cx - int(w * cut) // 2, 0, w), np.clip(cy - int(h * cut) // 2, 0, h)
    x2, y2 = np.clip(cx + int(w * cut) // 2, 0, w), np.clip(cy + int(h * cut) // 2, 0, h)
    return x1, y1, x2, y2


def train(model, loader, opt, crit):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        lam = np.random.beta(1.0, 1.0)
        perm = torch.randperm(x.size(0)).cuda()
        x1, y1, x2, y2 = rand_box(x.size(), lam)
        x[:, :, x1:x2, y1:y2] = x[perm, :, x1:x2, y1:y2]
        loss = crit(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_a_box_from_a_helper_drawing_host_randoms_is_a_graph_per_box():
    # held-out 19 r3 (CutMix-PyTorch's rand_bbox): 20 uncached compiles in 20 steps measured.
    found = [f for f in findings(CUTMIX, "XLA402") if "slices at an offset" in f.message]
    assert len(found) == 2 and all(f.fix is None for f in found)
    assert "numpy.random.randint (line 8)" in found[0].message
    assert "torch.where(m, x[perm], x)" in found[0].manual
    # Bounds from a helper that draws nothing are constants of the run.
    fixed_box = CUTMIX.replace("np.random.randint(w), np.random.randint(h)", "w // 2, h // 2")
    assert [f for f in findings(fixed_box, "XLA402") if "slices at an offset" in f.message] == []
