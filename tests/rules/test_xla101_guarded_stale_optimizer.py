"""A guarded move of modules an optimizer was built from before it (held-out 53,
RepDistiller: ``optimizer = optim.SGD(trainable_list.parameters())`` then ``if
torch.cuda.is_available(): module_list.cuda()``): XLA101's review fix rewrites the guard so
the move runs on XLA, where the optimizer keeps the CPU copies. XLA109 reports the pair; the
review reason of the move says it too."""

from tests.helpers import findings, src

GUARDED = src("""
import torch
import torch.nn as nn
import torch.optim as optim

student = nn.Linear(4, 2)
modules = nn.ModuleList([student])
optimizer = optim.SGD(modules.parameters(), lr=0.1)
if torch.cuda.is_available():
    modules.cuda()
for step in range(3):
    optimizer.zero_grad()
    student(torch.randn(8, 4)).sum().backward()
    optimizer.step()
""")


def test_the_guarded_moves_review_names_the_stale_optimizer():
    (move,) = findings(GUARDED, "XLA101")
    assert move.fix is not None and not move.fix.safe
    assert "the optimizer built on line 7" in move.fix.review_reason
    assert findings(GUARDED, "XLA109")


def test_without_an_earlier_optimizer_the_note_is_absent():
    code = GUARDED.replace(
        "optimizer = optim.SGD(modules.parameters(), lr=0.1)\nif torch.cuda.is_available():\n    modules.cuda()\n",
        "if torch.cuda.is_available():\n    modules.cuda()\noptimizer = optim.SGD(modules.parameters(), lr=0.1)\n",
    )
    (move,) = findings(code, "XLA101")
    assert "optimizer built on line" not in move.fix.review_reason
