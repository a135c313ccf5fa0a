"""Held-out 114 (CLIP-fine-tune): ``model, preprocess = clip.load(name, device=device)``
builds the module on the device, and ``torch.save(model, path)`` then writes XLA parameters
that load only where torch_xla is installed (the probe: plain torch raised NotImplementedError
for the 'XLA' backend)."""

from __future__ import annotations

from tests.helpers import findings, src

CLIP = src("""
import torch
import clip

device = "cuda" if torch.cuda.is_available() else "cpu"
model, preprocess = clip.load("ViT-L/14", device=device)
model = model.float()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
for step in range(3):
    loss = model.encode_image(torch.randn(1, 3, 224, 224, device=device)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(model, "clip.pt")
""")


def test_a_whole_module_a_loader_built_on_the_device_is_reported_at_its_save():
    (f,) = findings(CLIP, "XLA108")
    assert "the whole module `model`" in f.message and f.fix is None


def test_a_module_loaded_on_the_cpu_is_not():
    text = CLIP.replace(
        'clip.load("ViT-L/14", device=device)', 'clip.load("ViT-L/14", device="cpu")'
    )
    text = text.replace(", device=device).sum()", ").sum()")
    assert findings(text, "XLA108") == []
