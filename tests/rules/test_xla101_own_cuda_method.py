"""``x.cuda()`` on an instance of the script's own class that defines ``cuda()`` (held-out
65's mdistiller CRD: a plain ``AliasMethod`` object whose ``cuda()`` moves its tensors) runs
that method: ``.to(device)`` would raise AttributeError. The call is left alone; the moves
inside the method are reported and fixed there."""

from tests.helpers import findings, fixed, src

SAMPLER = src("""
import torch


class AliasSampler(object):
    def __init__(self, probs):
        self.prob = probs.clone()

    def cuda(self):
        self.prob = self.prob.cuda()

    def draw(self, n):
        return torch.multinomial(self.prob, n, replacement=True)


class Memory(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.sampler = AliasSampler(torch.ones(n))
        self.sampler.cuda()
""")


def test_the_call_of_the_scripts_own_cuda_method_is_left_alone():
    found = findings(SAMPLER, "XLA101")
    assert [f.span.start.line for f in found] == [8, 18]
    inside, call = found
    assert inside.fix is not None  # `self.prob.cuda()` inside AliasSampler.cuda
    assert (
        call.fix is None
        and "runs `AliasSampler.cuda()`, a method defined in this file" in call.message
    )
    assert "(line 9)" in call.message  # 1-based: the move inside the method
    out = fixed(SAMPLER, "XLA101")
    assert "        self.sampler.cuda()\n" in out
    assert "self.prob = self.prob.to(torch_xla.device())" in out


def test_a_subclass_inherits_the_method():
    code = SAMPLER.replace(
        "class Memory(", "class FastSampler(AliasSampler):\n    pass\n\n\nclass Memory("
    ).replace("AliasSampler(torch.ones(n))", "FastSampler(torch.ones(n))")
    lines = code.splitlines()
    (call,) = [f for f in findings(code, "XLA101") if "self.sampler" in lines[f.span.start.line]]
    assert call.fix is None and "runs `FastSampler.cuda()`" in call.message


def test_a_torch_module_of_the_script_still_gets_its_move_rewritten():
    code = SAMPLER.replace(
        "self.sampler = AliasSampler(torch.ones(n))", "self.sampler = torch.nn.Linear(n, n)"
    )
    assert any(
        "self.sampler.cuda()" in code.splitlines()[f.span.start.line]
        for f in findings(code, "XLA101")
    )


def test_a_workspace_class_with_its_own_cuda_method_is_not_rewritten(tmp_path):
    # Held-out 76's Fourier neural operator: `from utilities3 import *`, then
    # `y_normalizer = UnitGaussianNormalizer(y_train)` and `y_normalizer.cuda()`; the class is a
    # plain object whose cuda() moves its mean/std: `.to(...)` raised AttributeError.
    from xla_lens.engine import analyze
    from xla_lens.semantic import workspace_calls, workspace_classes

    workspace_calls.clear_cache()
    workspace_classes.clear_cache()
    (tmp_path / "utilities3.py").write_text(
        "import torch\n\n\nclass UnitGaussianNormalizer(object):\n"
        "    def __init__(self, x):\n"
        "        self.mean, self.std = torch.mean(x, 0), torch.std(x, 0)\n\n"
        "    def cuda(self):\n"
        "        self.mean = self.mean.cuda()\n"
        "        self.std = self.std.cuda()\n",
        encoding="utf-8",
    )
    script = tmp_path / "fourier_2d.py"
    script.write_text(
        "import torch\nfrom utilities3 import *\n\n"
        "y_normalizer = UnitGaussianNormalizer(torch.ones(4, 2))\ny_normalizer.cuda()\n",
        encoding="utf-8",
    )
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA101"]
    assert f.fix is None and f.span.start.line == 4
    assert f.message.startswith(
        "`y_normalizer.cuda()` runs `UnitGaussianNormalizer.cuda()`, a method of utilities3.py"
    )
    assert "(utilities3.py lines 9, 10)" in f.message
