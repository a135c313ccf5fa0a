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
