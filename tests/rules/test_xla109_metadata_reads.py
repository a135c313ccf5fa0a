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
