"""XLA107: a method running a whole training step that no loop of its file runs (its loop is
in another module, reached by a duck-typed ``agent.step()``: DeepRL, held-out 32) gets the
sync after its optimizer step, for review."""

from tests.helpers import findings, fixed

AGENT = """
import torch

class Agent:
    def __init__(self):
        self.net = torch.nn.Linear(8, 2).to("cuda")
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)
        self.total_steps = 0

    def step(self):
        x = torch.randn(32, 8, device="cuda")
        loss = self.net(x).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.total_steps += 1
"""


def test_a_step_method_no_loop_here_runs_is_reported_with_a_review_fix():
    [found] = findings(AGENT, "XLA107")
    assert found.span.start.line == 13
    assert found.fix is not None and not found.fix.safe
    assert "second sync" in found.fix.review_reason
    assert "torch_xla.sync()" not in fixed(AGENT, "XLA107")
    out = fixed(AGENT, "XLA107", unsafe=True)
    assert "self.opt.step()\n        torch_xla.sync()\n        self.total_steps += 1" in out


def test_a_step_this_file_calls_or_loops_over_is_the_loops_business():
    called = AGENT + "\nagent = Agent()\nagent.step()\n"
    assert not findings(called, "XLA107")
    looped = AGENT + "\nagent = Agent()\nfor _ in range(3):\n    agent.step()\n"
    assert [f.span.start.line for f in findings(looped, "XLA107")] == [17]


def test_a_step_that_syncs_or_a_method_without_backward_is_left_alone():
    synced = AGENT.replace("import torch\n", "import torch\nimport torch_xla\n").replace(
        "        self.total_steps += 1", "        torch_xla.sync()\n        self.total_steps += 1"
    )
    assert not findings(synced, "XLA107")
    no_backward = AGENT.replace("        loss.backward()\n", "")
    assert not findings(no_backward, "XLA107")
