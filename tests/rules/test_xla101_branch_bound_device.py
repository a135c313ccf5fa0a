"""XLA101's ``.cuda()`` → ``.to(<device variable>)`` only where that variable is bound on
every path to the call (held-out 43, HRNet: ``device`` bound under ``if distributed:``, and
the ``else:`` of a later test's ``nn.DataParallel(model).cuda()`` became ``.to(device)``, an
UnboundLocalError in every single-process run). Elsewhere the fix names the XLA device
itself."""

from tests.helpers import fixed

BRANCHES = """
import torch
import torch.nn as nn


def main(distributed, local_rank):
    if distributed:
        device = torch.device("cuda:{}".format(local_rank))
    model = nn.Linear(4, 2)
    if distributed:
        model = model.to(device)
    else:
        model = model.cuda()
    return model
"""


def test_a_device_bound_in_another_branch_is_not_used():
    out = fixed(BRANCHES, "XLA101")
    assert "model = model.to(torch_xla.device())" in out
    assert "model = model.to(device)\n    else" in out  # the distributed branch as it was


def test_a_device_bound_on_every_path_is_used():
    code = BRANCHES.replace(
        '    if distributed:\n        device = torch.device("cuda:{}".format(local_rank))\n',
        '    device = torch.device("cuda:{}".format(local_rank))\n',
    )
    assert "model = model.to(device)\n    return" in fixed(code, "XLA101")


def test_a_device_bound_in_a_loop_may_never_be_bound():
    code = BRANCHES.replace(
        '    if distributed:\n        device = torch.device("cuda:{}".format(local_rank))\n',
        '    for _ in range(local_rank):\n        device = torch.device("cuda:{}".format(local_rank))\n',
    )
    assert "model = model.to(torch_xla.device())" in fixed(code, "XLA101")


def test_a_device_bound_earlier_in_the_same_branch_is_used():
    code = (
        BRANCHES.replace(
            "    else:\n        model = model.cuda()\n",
            "    if distributed:\n        model = model.cuda()\n",
        )
        .replace(
            "    if distributed:\n        model = model.to(device)\n",
            "",
        )
        .replace(
            '    if distributed:\n        device = torch.device("cuda:{}".format(local_rank))\n'
            "    model = nn.Linear(4, 2)\n",
            '    model = nn.Linear(4, 2)\n    if distributed:\n        device = torch.device("cuda:{}".format(local_rank))\n'
            "        model = model.cuda()\n",
        )
    )
    out = fixed(code, "XLA101")
    assert "        model = model.to(device)\n    if distributed:" in out
    # A second ``if distributed:`` is another test: its branch does not see that binding.
    assert "    if distributed:\n        model = model.to(torch_xla.device())" in out
