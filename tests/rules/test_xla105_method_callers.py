"""XLA105's "no caller is visible" review must see a method called on an instance of its
class (held-out 178's DeepFM: ``model = DeepFM(...)``, then ``model.fit(loader, val,
optimizer)``, and ``fit`` binds ``model = self.train()`` too): the review said no caller of
``fit()`` was visible in the file."""

from tests.helpers import findings, src

SCRIPT = src("""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)

    def fit(self, batches, optimizer):
        model = self.train()
        for x, y in batches:
            loss = ((model(x) - y) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


CALLER
""")

BUILT = """model = Net().to("cuda")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.fit([(torch.randn(8, 4), torch.randn(8, 1))], optimizer)"""


def _step(code: str):
    (f,) = findings(code, "XLA105")
    return f


def test_a_method_called_on_an_instance_here_has_a_visible_caller():
    f = _step(SCRIPT.replace("CALLER", BUILT))
    assert f.fix is not None and f.fix.safe, f.fix


def test_a_method_nobody_calls_here_still_waits_for_review():
    f = _step(SCRIPT.replace("CALLER", ""))
    assert f.fix is not None and not f.fix.safe
    assert "no caller of it is visible" in f.fix.review_reason
