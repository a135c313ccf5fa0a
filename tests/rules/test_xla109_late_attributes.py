"""XLA109's reorder must not move ``self.to(self.device)`` above the statement that sets
``self.device`` (held-out 175, a DQN whose ``__init__`` builds the optimizer, then sets
``self.device``, then moves): the safe fix put the move first and the converted script died
with AttributeError, on the CPU as on XLA. It is now reported once, without a fix, saying why."""

import subprocess
import sys

from tests.helpers import findings, fixed, src

DQN = src("""
import torch as T
import torch.nn as nn
import torch.optim as optim


class DeepQNetwork(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)
        self.optimizer = optim.Adam(self.parameters(), lr=lr)
        self.loss = nn.MSELoss()
        DEVICE_LINE
        self.to(self.device)

    def forward(self, x):
        return self.fc2(T.relu(self.fc1(x)))


net = DeepQNetwork(0.01)
for _ in range(3):
    net.optimizer.zero_grad()
    loss = net.loss(net(T.randn(5, 4).to(net.device)), T.zeros(5, 2).to(net.device))
    loss.backward()
    net.optimizer.step()
print("ok", net.fc1.weight.device)
""")

LATE = "self.device = T.device('cuda:0' if T.cuda.is_available() else 'cpu')"


def test_a_move_reading_an_attribute_set_after_the_optimizer_is_not_reordered():
    code = DQN.replace("DEVICE_LINE", LATE)
    (f,) = findings(code, "XLA109")
    assert f.fix is None
    assert "`self.device`, which the move reads, is set after the optimizer" in f.manual
    out = fixed(code, None)
    assert out.index("self.device = ") < out.index("self.to(self.device)")
    run = subprocess.run([sys.executable, "-c", out], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-1500:]


def test_an_attribute_set_before_the_optimizer_keeps_the_safe_reorder():
    code = DQN.replace("        DEVICE_LINE\n", "").replace(
        "        self.fc1 =", f"        {LATE}\n        self.fc1 ="
    )
    (f,) = findings(code, "XLA109")
    assert f.fix is not None and f.fix.safe
    out = fixed(code, "XLA109")
    assert out.index("self.to(self.device)") < out.index("self.optimizer = ")
