"""XLA105 where the optimizer step sits in a wrapper class (an LR-schedule wrapper such as
``ScheduledOptim.step_and_update_lr()`` calling ``self._optimizer.step()``): the method the
training loop calls is the step, and the fix goes to the inner ``.step()``, never to the call
site (the wrapper has no ``param_groups``/``step`` of a torch optimizer, and the LR update
would be skipped). A wrapper class of another module of the project: reported at the call,
with the inner step named and no automatic fix."""

from pathlib import Path

from xla_lens.engine import analyze

from tests.helpers import findings, fixed, src

CODE = "XLA105"

WRAPPER = """
import torch
import torch.nn as nn

class WarmupOptim:
    def __init__(self, optimizer, warmup):
        self._optimizer = optimizer
        self.warmup = warmup
        self.n = 0

    def step_and_update_lr(self):
        self.n += 1
        for g in self._optimizer.param_groups:
            g["lr"] = min(1.0, self.n / self.warmup) * 1e-3
        self._optimizer.step()

    def zero_grad(self):
        self._optimizer.zero_grad()

def main():
    device = torch.device("cuda")
    net = nn.Linear(16, 4).to(device)
    opt = WarmupOptim(torch.optim.Adam(net.parameters()), warmup=10)
    for _ in range(20):
        x = torch.randn(8, 16, device=device)
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step_and_update_lr()
"""

# The attribute is not named like an optimizer: the constructor's argument says it is one.
PLAIN_NAMES = """
import torch

class Wrap:
    def __init__(self, o):
        self._o = o

    def advance(self):
        self._o.step()

def train(model, batches, w):
    for x in batches:
        loss = model(x).sum()
        loss.backward()
        w.advance()

def main():
    model = torch.nn.Linear(8, 1)
    w = Wrap(torch.optim.SGD(model.parameters(), lr=0.1))
    train(model, [torch.randn(4, 8)], w)
"""


def test_inner_step_of_a_wrapper_method_is_reported():
    found = findings(WRAPPER, CODE)
    assert [f.span.start.line for f in found] == [13]  # self._optimizer.step() (0-based lines)
    assert found[0].fix is not None and found[0].fix.safe


def test_fix_goes_to_the_inner_step_not_the_call_site():
    out = fixed(WRAPPER, CODE)
    assert "xm.optimizer_step(self._optimizer)" in out
    assert "opt.step_and_update_lr()" in out
    assert "xm.optimizer_step(opt)" not in out


def test_attribute_known_from_the_constructor_argument():
    found = findings(PLAIN_NAMES, CODE)
    assert [f.span.start.line for f in found] == [7]
    assert "xm.optimizer_step(self._o)" in fixed(PLAIN_NAMES, CODE)


def test_not_a_step_when_the_attribute_is_no_optimizer():
    code = PLAIN_NAMES.replace(
        "Wrap(torch.optim.SGD(model.parameters(), lr=0.1))", "Wrap(torch.optim.lr_scheduler)"
    )
    # A scheduler-like object: nothing says ``self._o`` is an optimizer.
    code = code.replace("w = Wrap(torch.optim.lr_scheduler)", "w = Wrap(make_sched())")
    assert findings(code, CODE) == []


OPTIM_MODULE = """
class ScheduledOptim:
    def __init__(self, optimizer, lr_mul):
        self._optimizer = optimizer
        self.lr_mul = lr_mul
        self.n_steps = 0

    def step_and_update_lr(self):
        self._update_learning_rate()
        self._optimizer.step()

    def zero_grad(self):
        self._optimizer.zero_grad()

    def _update_learning_rate(self):
        self.n_steps += 1
        for g in self._optimizer.param_groups:
            g["lr"] = self.lr_mul / self.n_steps
"""

TRAIN = """
import torch
import torch.optim as optim
from pkg.optim_wrap import ScheduledOptim


def train_epoch(model, data, optimizer, device):
    for x in data:
        x = x.to(device)
        optimizer.zero_grad()
        loss = model(x).sum()
        loss.backward()
        optimizer.step_and_update_lr()


def train(model, data, optimizer, device, epochs):
    for epoch in range(epochs):
        train_epoch(model, data, optimizer, device)


def main():
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 1).to(device)
    optimizer = ScheduledOptim(optim.Adam(model.parameters()), 2.0)
    train(model, [torch.randn(2, 4)], optimizer, device, 3)
"""


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "optim_wrap.py").write_text(src(OPTIM_MODULE))
    script = tmp_path / "train.py"
    script.write_text(src(TRAIN))
    return script


def test_wrapper_class_of_another_module_reported_at_the_call(tmp_path):
    script = _workspace(tmp_path)
    result = analyze(script.read_text(), path=str(script))
    found = [f for f in result.findings if f.code == CODE]
    assert [f.span.start.line for f in found] == [11]  # optimizer.step_and_update_lr()
    assert found[0].fix is None  # the step to rewrite is in the other file
    assert "optim_wrap.py" in found[0].manual and "self._optimizer" in found[0].manual
    assert found[0].manual.endswith("keep this call as it is (it also updates the learning rate)")


def test_a_plain_update_method_of_another_module_makes_no_learning_rate_claim(tmp_path):
    # Held-out 21 (a2c-ppo's discr.update(loader)): the method runs the whole step.
    script = _workspace(tmp_path)
    lib = tmp_path / "pkg" / "optim_wrap.py"
    lib.write_text(lib.read_text().replace("step_and_update_lr", "update"))
    script.write_text(script.read_text().replace("step_and_update_lr", "update"))
    (found,) = [f for f in analyze(script.read_text(), path=str(script)).findings if f.code == CODE]
    assert found.manual.endswith("keep this call as it is")


def test_wrapper_class_of_another_module_makes_the_batch_loop_the_step_loop(tmp_path):
    script = _workspace(tmp_path)
    result = analyze(script.read_text(), path=str(script))
    assert [f.span.start.line for f in result.findings if f.code == "XLA107"] == [6]


def test_converted_wrapper_still_steps_and_is_not_reported(tmp_path):
    script = _workspace(tmp_path)
    lib = tmp_path / "pkg" / "optim_wrap.py"
    lib.write_text(
        "import torch_xla.core.xla_model as xm\n"
        + lib.read_text().replace("self._optimizer.step()", "xm.optimizer_step(self._optimizer)")
    )
    result = analyze(script.read_text(), path=str(script))
    assert [f for f in result.findings if f.code == CODE] == []
    # Still the step: the batch loop stays the step loop, the epoch loop is none.
    assert [f.span.start.line for f in result.findings if f.code == "XLA107"] == [6]


AGENTS = """
import torch


class Actor:
    def __init__(self):
        self.net = torch.nn.Linear(4, 1).to("cuda")
        self.opt = torch.optim.Adam(self.net.parameters())

    def train(self, x):
        loss = self.net(x).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


class Slow(Actor):
    pass
"""

OTHER_AGENT = """
import torch


class Critic:
    def __init__(self):
        self.q = torch.nn.Linear(4, 1).to("cuda")
        self.q_opt = torch.optim.SGD(self.q.parameters(), lr=0.1)

    def train(self, x):
        loss = self.q(x).mean()
        self.q_opt.zero_grad()
        loss.backward()
        self.q_opt.step()
"""

PICKS = """
import sys
import torch
import agents
import critic

if sys.argv[1] == "actor":
    policy = agents.Actor()
elif sys.argv[1] == "slow":
    policy = agents.Slow()
else:
    policy = critic.Critic()
for t in range(100):
    policy.train(torch.randn(8, 4))
"""


def test_receiver_bound_to_classes_of_several_modules_runs_each_ones_step(tmp_path):
    # Held-out 18 (sfujim/TD3: policy = TD3.TD3(...) / OurDDPG.DDPG(...) / DDPG.DDPG(...)):
    # the loop is a training loop whichever class the user picks.
    (tmp_path / "agents.py").write_text(src(AGENTS))
    (tmp_path / "critic.py").write_text(src(OTHER_AGENT))
    script = tmp_path / "main.py"
    script.write_text(src(PICKS))
    result = analyze(script.read_text(), path=str(script))
    (step,) = [f for f in result.findings if f.code == CODE]
    assert step.span.start.line + 1 == 13
    assert "of `Actor` or `Slow` (agents.py:13)" in step.message
    assert "`self.q_opt.step()` of `Critic` (critic.py:13)" in step.message
    assert step.manual.count("replace") == 2 and "xm.optimizer_step(self.q_opt)" in step.manual
    assert [f.span.start.line + 1 for f in result.findings if f.code == "XLA107"] == [12]
    # The networks are placed by the classes' own module: not "nothing places the model".
    assert not [f for f in result.findings if f.code == "XLA117"]


def test_an_agent_bound_in_a_tuple_assignment_is_followed(tmp_path):
    # held-out 22 r8 (`agent, env = Agent(device), Env()`): the tuple hid the agent whose
    # learn() steps its optimizer in agent.py, and with it the training loop.
    (tmp_path / "agent.py").write_text(
        src(
            """
            import torch
            class Agent:
                def __init__(self, device):
                    self.net = torch.nn.Linear(4, 2).to(device)
                    self.opt = torch.optim.Adam(self.net.parameters())
                def learn(self, batch):
                    loss = self.net(batch).sum()
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
            """
        )
    )
    (tmp_path / "env.py").write_text("class Env:\n    pass\n")
    script = tmp_path / "main.py"
    script.write_text(
        src(
            """
            import torch
            from agent import Agent
            from env import Env
            agent, env = Agent(torch.device("cuda")), Env()
            for t in range(100):
                agent.learn(torch.randn(8, 4).cuda())
            """
        )
    )
    result = analyze(script.read_text(), path=str(script))
    codes = {f.code for f in result.findings}
    assert {"XLA105", "XLA107"} <= codes, codes
    unpacked = script.read_text().replace('Agent(torch.device("cuda")), Env()', "make()")
    result = analyze(unpacked, path=str(script))
    assert "XLA105" not in {f.code for f in result.findings}


def test_steps_of_optimizers_held_in_a_collection_are_optimizer_steps():
    # held-out 28 (stargan-v2: `optims = self.optims`, a Munch of Adams, then
    # `optims.discriminator.step()`); `opts` (often the options) is not taken.
    code = """
    import torch
    def train(nets, optims, batches, opts):
        for x in batches:
            loss = nets.d(x.cuda()).mean()
            loss.backward()
            optims.discriminator.step()
            self_optimizers["g"].step()
            opts.schedule.step()
    """
    lines = [f.span.start.line for f in findings(code, "XLA105")]
    assert lines == [5, 6]
