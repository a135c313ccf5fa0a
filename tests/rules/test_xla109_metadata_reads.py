"""A model built from a tensor's size is not built from the tensor (held-out 51, pyGAT:
``GAT(nfeat=features.shape[1], nclass=int(labels.max()) + 1)``, Adam built, then
``features.cuda()``): the moves of ``features`` and ``labels`` strand no optimizer, so XLA109
names only the model and XLA101's notes on those moves stay quiet about optimizers."""

from tests.helpers import findings, src

GAT = src("""
import torch
import torch.nn as nn
import torch.optim as optim


class GAT(nn.Module):
    def __init__(self, nfeat, nclass):
        super().__init__()
        self.fc = nn.Linear(nfeat, nclass)

    def forward(self, x):
        return self.fc(x)


features = torch.randn(20, 5)
labels = torch.randint(0, 3, (20,))
model = GAT(nfeat=features.shape[1], nclass=int(labels.max()) + 1)
optimizer = optim.Adam(model.parameters(), lr=0.01)
model.cuda()
features = features.cuda()
labels = labels.cuda()
for epoch in range(3):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(features), labels)
    loss.backward()
    optimizer.step()
""")


def test_only_the_model_strands_the_optimizer():
    stale = findings(GAT, "XLA109")
    assert len(stale) == 1 and "`model`" in stale[0].message
    for f in findings(GAT, "XLA101"):
        if (
            "features" in GAT.splitlines()[f.span.start.line]
            or "labels" in GAT.splitlines()[f.span.start.line]
        ):
            assert "optimizer" not in f.message


def test_a_model_built_from_the_tensor_itself_still_counts():
    code = GAT.replace(
        "model = GAT(nfeat=features.shape[1], nclass=int(labels.max()) + 1)",
        "model = nn.ParameterList([nn.Parameter(features)])",
    ).replace("model.cuda()\n", "")
    assert any("`features`" in f.message for f in findings(code, "XLA109"))


VAE_SIZED = src("""
import torch
import torch.nn as nn


def main(vae, loader, pretrained):
    latent = vae.encode(torch.zeros(1, 1, 8, 8)).sample().shape[2:]
    model = nn.Conv2d(
        1 if vae is None else vae.config["latent_channels"],
        1 if vae is None else vae.config["latent_channels"],
        3,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for x in loader:
        vae.to(x.device)
        with torch.no_grad():
            z = vae.encode(x).sample()
        loss = model(z).pow(2).mean()
        loss.backward()
        optimizer.step()
""")


def test_a_model_sized_from_another_modules_config_and_output_shape_does_not_hold_it():
    # held-out 66's audio-diffusion: the UNet is sized from the VAE's config and its latent
    # shape, the optimizer holds the UNet's parameters, and the VAE moves in the loop.
    assert not any("`vae`" in f.message for f in findings(VAE_SIZED, "XLA109"))


def test_a_model_built_around_the_other_module_still_counts():
    code = VAE_SIZED.replace(
        "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)",
        "    model = nn.Sequential(vae, model)\n"
        "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)",
    )
    assert any("`vae`" in f.message for f in findings(code, "XLA109"))
