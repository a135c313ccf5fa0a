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
    lines = [f.span.start.line for f in findings(SAMPLER, "XLA101")]
    assert lines == [8]  # inside AliasSampler.cuda, not `self.sampler.cuda()` (line 18)
    out = fixed(SAMPLER, "XLA101")
    assert "        self.sampler.cuda()\n" in out
    assert "self.prob = self.prob.to(torch_xla.device())" in out


def test_a_subclass_inherits_the_method():
    code = SAMPLER.replace(
        "class Memory(", "class FastSampler(AliasSampler):\n    pass\n\n\nclass Memory("
    ).replace("AliasSampler(torch.ones(n))", "FastSampler(torch.ones(n))")
    assert all(
        "self.sampler" not in code.splitlines()[f.span.start.line] for f in findings(code, "XLA101")
    )


def test_a_torch_module_of_the_script_still_gets_its_move_rewritten():
    code = SAMPLER.replace(
        "self.sampler = AliasSampler(torch.ones(n))", "self.sampler = torch.nn.Linear(n, n)"
    )
    assert any(
        "self.sampler.cuda()" in code.splitlines()[f.span.start.line]
        for f in findings(code, "XLA101")
    )
