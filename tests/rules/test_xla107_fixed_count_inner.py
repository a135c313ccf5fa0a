"""XLA107 on a fixed-count loop of steps inside the loop over the batches (held-out 89,
MCD_DA's solver: `for i in xrange(self.num_k):` generator steps after the classifier steps of
each batch): the batch loop's sync covers it, the same graph every batch; a sync inside too ran
num_k + 1 graphs a batch. An inner loop that draws its own batches keeps its finding."""

import pytest

from tests.helpers import findings, fixed, src

SOLVER = src("""
import torch

device = "cuda"
G = torch.nn.Linear(4, 4).to(device)
C = torch.nn.Linear(4, 2).to(device)
opt_g = torch.optim.SGD(G.parameters(), lr=0.1)
opt_c = torch.optim.SGD(C.parameters(), lr=0.1)
num_k = 4


def train(loader):
    for batch_idx, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.cross_entropy(C(G(x)), y)
        loss.backward()
        opt_g.step()
        opt_c.step()
        for i in range(num_k):
            INNER
            opt_g.zero_grad()
            C(G(x)).pow(2).mean().backward()
            opt_g.step()
""")


def _headers(code: str) -> list[str]:
    lines = code.splitlines()
    return [lines[f.span.start.line].strip() for f in findings(code, "XLA107")]


@pytest.mark.parametrize("counter", ["range", "xrange"])
def test_the_fixed_count_inner_loop_is_left_to_the_batch_loops_sync(counter):
    # `xrange`: Python 2's range (MCD_DA imports it through a star import).
    code = SOLVER.replace("            INNER\n", "").replace(
        "in range(num_k)", f"in {counter}(num_k)"
    )
    assert _headers(code) == ["for batch_idx, (x, y) in enumerate(loader):"]
    out = fixed(code, "XLA107")
    assert out.count("torch_xla.sync()") == 1


def test_an_inner_loop_drawing_its_own_batches_keeps_its_finding():
    code = SOLVER.replace("INNER", "x = next(extra).to(device)")
    assert "for i in range(num_k):" in _headers(code)
