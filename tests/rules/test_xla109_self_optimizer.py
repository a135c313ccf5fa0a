"""XLA109: a module class that builds its optimizer in ``__init__`` from ``self.parameters()``,
and an instance moved to the device afterwards (held-out 24, minimalRL's PPO). On XLA the move
makes new Parameter objects: measured on torch_xla 2.9, the weights after three steps equal
the initial ones."""

from tests.helpers import findings

CLASS = """
import torch
import torch.nn as nn


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)
"""


def test_an_instance_moved_after_its_constructor_built_the_optimizer():
    for move in (
        "agent = Agent().to(dev)",
        "agent = Agent()\nagent.to(dev)",
        "agent = Agent().cuda()",
    ):
        code = CLASS + '\ndev = torch.device("cuda")\n' + move + "\n"
        (f,) = findings(code, "XLA109")
        assert f.span.start.line == 8 and f.fix is None
        assert "`Agent.__init__` builds its optimizer from `self.parameters()`" in f.message
        assert "self.to(device)" in f.manual and f.related


def test_a_dtype_move_or_a_class_building_no_optimizer_is_left_alone():
    code = CLASS + "\nagent = Agent().to(torch.float64)\n"
    assert findings(code, "XLA109") == []
    code = CLASS.replace("self.optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)", "pass")
    assert findings(code + '\nagent = Agent().to("cuda")\n', "XLA109") == []


def test_the_script_that_places_nothing_is_told_where_its_optimizer_is_built():
    code = (
        CLASS
        + """

agent = Agent()
for step in range(3):
    loss = agent.fc(torch.randn(8, 4)).pow(2).mean()
    agent.optimizer.zero_grad()
    loss.backward()
    agent.optimizer.step()
"""
    )
    (f,) = findings(code, "XLA117")
    assert "`Agent.__init__` builds its optimizer from `self.parameters()` (line 9)" in f.manual
    assert "XLA109" in f.manual


def test_optimizers_over_submodules_before_self_to_in_the_same_method():
    # held-out 28 (stargan-v2's Solver.__init__): `self.optims[net] = Adam(
    # self.nets[net].parameters())`, then `self.to(self.device)` moves the submodules.
    code = """
    import torch
    import torch.nn as nn
    class Solver(nn.Module):
        def __init__(self, nets):
            super().__init__()
            self.device = torch.device("cuda")
            self.nets = nets
            self.optims = {}
            for name in self.nets:
                self.optims[name] = torch.optim.Adam(params=self.nets[name].parameters())
            self.to(self.device)
    """
    (f,) = findings(code, "XLA109")
    assert "`Solver.__init__` builds this optimizer from parameters of its own submodules" in (
        f.message
    )
    assert "`self.to(self.device)` (line 11)" in f.message and f.span.start.line == 9
    moved_first = code.replace("            self.to(self.device)\n", "").replace(
        "            self.optims = {}\n",
        "            self.to(self.device)\n            self.optims = {}\n",
    )
    assert findings(moved_first, "XLA109") == []


WORKSPACE = """
import hydra
import torch


class TrainWorkspace:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = hydra.utils.instantiate(cfg.policy)
        self.optimizer = hydra.utils.instantiate({config}, params=self.model.parameters())

    def run(self):
        device = torch.device(self.cfg.training.device)
        self.model.to(device)
        for batch in self.loader:
            loss = self.model(batch.to(device)).mean()
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


def test_an_optimizer_a_hydra_config_names_is_built_before_the_move():
    # diffusion_policy's workspaces (held-out 37): the optimizer class comes from the config,
    # built in __init__ from the model's parameters; run() moves the model afterwards.
    (f,) = findings(WORKSPACE.replace("{config}", "cfg.optimizer"), "XLA109")
    assert f.span.start.line == 8 and f.fix is None  # 0-based: the build's line
    assert "before `self.model.to(device)` (line 13)" in f.message


def test_a_hydra_object_that_is_no_optimizer_is_no_build():
    # ``params=`` alone does not make an optimizer: the config entry must say it is one.
    assert findings(WORKSPACE.replace("{config}", "cfg.ema"), "XLA109") == []
