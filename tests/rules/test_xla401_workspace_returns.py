"""XLA401: what a training method of another module's class returns (held-out 21, a2c-ppo's
``value_loss, action_loss, dist_entropy = agent.update(rollouts)``, averages of ``.item()``
sums): Python numbers, so logging them reads nothing from the device."""

from xla_lens.engine import analyze

from tests.helpers import src

AGENT = """
import torch


class Agent:
    def __init__(self, net, epochs):
        self.net = net
        self.ppo_epoch = epochs
        self.opt = torch.optim.Adam(net.parameters())

    def update(self, batches):
        value_loss_epoch = 0
        for x in batches:
            loss = self.net(x).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            value_loss_epoch += loss.item()
        num_updates = self.ppo_epoch * len(batches)
        value_loss_epoch /= num_updates
        return value_loss_epoch, 0.0
"""

MAIN = """
import torch
from agent import Agent

net = torch.nn.Linear(4, 1).to("cuda")
agent = Agent(net, 2)
for j in range(10):
    value_loss, other_loss = agent.update([torch.randn(2, 4, device="cuda")])
    print("value loss {:.3f} {:.3f}".format(value_loss, other_loss))
"""


def _reads(tmp_path, agent: str) -> list:
    (tmp_path / "agent.py").write_text(src(agent))
    script = tmp_path / "main.py"
    script.write_text(src(MAIN))
    found = analyze(script.read_text(), str(script)).findings
    return [f for f in found if f.code == "XLA401" and f.span.start.line == 7]


def test_python_numbers_returned_by_another_modules_training_method_are_no_read(tmp_path):
    assert _reads(tmp_path, AGENT) == []


def test_a_returned_loss_tensor_is_still_a_read(tmp_path):
    code = AGENT.replace("return value_loss_epoch, 0.0", "return loss, 0.0")
    (f,) = _reads(tmp_path, code)
    assert "logging call" in f.message
