"""XLA117: a training script that places nothing on any device keeps training on the CPU after
conversion; the tool must say so (and offer no fix: the tensors to move are all over)."""

from xla_lens.engine import analyze
from xla_lens.engine.fixing import fix_source
from xla_lens.engine.leftover import CLI_REVIEW, leftover
from xla_lens.rules.base import Severity
from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

# A hand-rolled SGD on a tiny curve fit: no device anywhere.
CURVE_FIT = """
import torch
import torch.nn.functional as F

true_w = torch.randn(3, 1)

def sample(n=16):
    x = torch.randn(n, 3)
    return x, x @ true_w

net = torch.nn.Linear(3, 1)
for it in range(100):
    xb, yb = sample()
    net.zero_grad()
    err = F.mse_loss(net(xb), yb)
    err.backward()
    for w in net.parameters():
        w.data.add_(-0.05 * w.grad)
    if err.item() < 1e-4:
        break
"""

# A model with its own optimizer, built in the main guard.
WITH_OPTIMIZER = """
import torch
from torch import nn

class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(2, 2)

    def forward(self, x):
        state = torch.zeros(x.size(0), 2)
        return self.body(x) + state

if __name__ == "__main__":
    data = torch.randn(8, 2)
    tiny = Tiny()
    tiny.double()
    opt = torch.optim.Adam(tiny.parameters(), lr=1e-2)
    for epoch in range(5):
        opt.zero_grad()
        tiny(data.double()).pow(2).mean().backward()
        opt.step()
"""


def test_a_loop_whose_model_is_never_placed_is_reported_at_the_model_without_a_fix():
    (f,) = findings(CURVE_FIT, "XLA117")
    assert f.span.start.line + 1 == 10 and f.severity == Severity.WARNING
    assert f.fix is None
    assert "torch_xla.device()" in f.manual and "before" in f.manual
    assert "CPU" in f.message


def test_the_model_is_found_through_its_optimizer():
    (f,) = findings(WITH_OPTIMIZER, "XLA117")
    assert src(WITH_OPTIMIZER).splitlines()[f.span.start.line].strip() == "tiny = Tiny()"


def test_the_legacy_target_names_xm_xla_device():
    (f,) = findings(CURVE_FIT, "XLA117", target="legacy")
    assert "xm.xla_device()" in f.manual


def test_still_reported_after_the_other_fixes_added_torch_xla():
    # XLA107 adds ``import torch_xla`` and a sync: the model is still on the CPU.
    out = fixed(CURVE_FIT)
    assert "torch_xla.sync()" in out
    assert [f.code for f in findings(out, "XLA117")] == ["XLA117"]


def test_fix_says_the_script_does_not_reach_the_xla_device():
    out = fix_source(src(CURVE_FIT), target="modern")
    remaining = list(analyze(out.source, target="modern").findings)
    text = leftover(remaining).statement(CLI_REVIEW)
    assert "does not reach the XLA device" in text and "XLA117" in text


def test_quiet_when_anything_places_the_model_or_its_batches():
    placements = [
        ("net = torch.nn.Linear(3, 1)", "net = torch.nn.Linear(3, 1).to(dev)"),
        ("net = torch.nn.Linear(3, 1)", "net = torch.nn.Linear(3, 1).cuda()"),
        ("x = torch.randn(n, 3)", "x = torch.randn(n, 3, device=dev)"),
        ("xb, yb = sample()", "xb, yb = sample()\n    xb = xb.to(yb)"),
        ("import torch\n", "import torch\ntorch.set_default_device('cuda')\n"),
    ]
    for old, new in placements:
        code = src(CURVE_FIT).replace(old, new)
        assert old in src(CURVE_FIT) and findings(code, "XLA117") == [], new


def test_a_dtype_only_to_still_places_nothing():
    code = src(CURVE_FIT).replace(
        "xb, yb = sample()", "xb, yb = sample()\n    xb = xb.to(torch.float64)"
    )
    assert [f.code for f in findings(code, "XLA117")] == ["XLA117"]


def test_quiet_on_xla_scripts_frameworks_and_scripts_without_a_training_loop():
    on_xla = "import torch_xla\n" + src(CURVE_FIT).replace(
        "net = torch.nn.Linear(3, 1)", "net = torch.nn.Linear(3, 1).to(torch_xla.device())"
    )
    assert findings(on_xla, "XLA117") == []
    accelerate = "from accelerate import Accelerator\n" + src(CURVE_FIT)
    assert findings(accelerate, "XLA117") == []
    no_loop = src(CURVE_FIT).split("for it")[0]
    assert findings(no_loop, "XLA117") == []


def test_rule_is_registered_with_a_page():
    rule = get_rule("XLA117")
    assert rule is not None and rule.has_fix and "## Fix safety" in rule.doc


SIBLING_BUILT = """
import torch
from nets import Tiny

tiny = Tiny()
opt = torch.optim.SGD(tiny.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    tiny(torch.randn(2, 2)).sum().backward()
    opt.step()
"""


def test_a_model_built_by_a_sibling_module_that_places_things_is_left_alone(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(src(SIBLING_BUILT))
    nets = tmp_path / "nets.py"
    nets.write_text(
        "import torch\nclass Tiny(torch.nn.Linear):\n    def __init__(self):\n        super().__init__(2, 2)\n"
    )
    found = analyze(script.read_text(), str(script), target="modern").findings
    assert [f.code for f in found if f.code == "XLA117"] == ["XLA117"]
    nets.write_text(nets.read_text() + "        self.cuda()\n")
    found = analyze(script.read_text(), str(script), target="modern").findings
    assert [f.code for f in found if f.code == "XLA117"] == []


def test_model_handed_in_by_a_caller_of_another_module_is_not_reported(tmp_path):
    # Held-out 21 (a2c-ppo algo/ppo.py): PPO gets actor_critic, which main.py placed on the
    # device before building the PPO object.
    code = src(
        """
        import torch

        class Learner:
            def __init__(self, net):
                self.net = net
                self.opt = torch.optim.Adam(net.parameters())

            def update(self, batches):
                for x, y in batches:
                    loss = (self.net(x) - y).pow(2).mean()
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
        """
    )
    path = str(tmp_path / "learner.py")
    assert not [f for f in analyze(code, path).findings if f.code == "XLA117"]
    # Built here and handed to the same class: this script's placement decides.
    built = code + "\n\nnet = torch.nn.Linear(4, 1)\nLearner(net).update([])\n"
    assert [f.code for f in analyze(built, path).findings if f.code == "XLA117"] == ["XLA117"]


# Held-out 32 (DeepRL's agents): the network comes from a factory on the config object the
# caller hands in, and the batches from a sibling module's helper that moves them itself.
FACTORY_AGENT = """
import numpy as np

class Agent:
    def __init__(self, config):
        self.net = config.network_fn()
        self.opt = config.optimizer_fn(self.net.parameters())

    def step(self, data):
        for _ in range(4):
            loss = self.net(data).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
"""


def test_a_network_from_a_factory_the_caller_hands_in_is_not_reported(tmp_path):
    path = str(tmp_path / "agent.py")
    assert not [f for f in analyze(src(FACTORY_AGENT), path).findings if f.code == "XLA117"]
    # The same class building its own network: nothing places it, so it is reported.
    own = src(FACTORY_AGENT).replace("config.network_fn()", "__import__('torch').nn.Linear(8, 1)")
    own = own.replace("config.optimizer_fn(", "__import__('torch').optim.SGD(")
    assert [f.code for f in analyze(own, path).findings if f.code == "XLA117"] == ["XLA117"]


def test_batches_made_by_a_sibling_helper_that_places_them_are_not_reported(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        src(
            """
            import numpy as np
            import torch
            from helpers import tensor

            net = torch.nn.Linear(8, 1)
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            for step in range(3):
                x = tensor(np.random.randn(4, 8))
                opt.zero_grad()
                net(x).sum().backward()
                opt.step()
            """
        )
    )
    helpers = tmp_path / "helpers.py"
    helpers.write_text("import torch\ndef tensor(x):\n    return torch.as_tensor(x)\n")
    found = analyze(script.read_text(), str(script), target="modern").findings
    assert [f.code for f in found if f.code == "XLA117"] == ["XLA117"]
    helpers.write_text(
        "import torch\nDEVICE = 'cpu'\ndef tensor(x):\n    return torch.as_tensor(x).to(DEVICE)\n"
    )
    found = analyze(script.read_text(), str(script), target="modern").findings
    assert [f.code for f in found if f.code == "XLA117"] == []
