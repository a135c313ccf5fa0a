"""XLA401 stays quiet on the CPU copy of a module reached through a loop variable narrowed by
``isinstance(value, torch.nn.Module)`` (a snapshot dict of modules and settings, each module
deep-copied and moved to the host once per tick): a model copied to the host on purpose, not
a tensor read. A tensor ``.cpu()`` in the same loop is still reported."""

from tests.helpers import findings

SNAPSHOT = """
import copy
import pickle
import torch
import torch.nn as nn

device = torch.device("cuda")
net = torch.nn.Linear(4, 1).to(device)
ema = copy.deepcopy(net)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(1000):
    loss = net(torch.randn(8, 4, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 500 == 0:
        data = dict(ema=ema, scale=loss.detach(), tag="x")
        for key, value in data.items():
            if isinstance(value, torch.nn.Module):
                value = copy.deepcopy(value).eval().requires_grad_(False)
                check_consistency(value)
                data[key] = value.cpu()
            elif isinstance(value, torch.Tensor):
                data[key] = value.cpu()
            del value
        with open("snap.pkl", "wb") as f:
            pickle.dump(data, f)
"""

MODULE_LINE, TENSOR_LINE = 20, 22  # 0-based


def _lines(code: str) -> list[int]:
    return [f.span.start.line for f in findings(code, "XLA401")]


def test_the_cpu_copy_of_a_narrowed_module_is_not_a_read():
    assert MODULE_LINE not in _lines(SNAPSHOT)
    # The tensor branch of the same loop is a host read.
    assert TENSOR_LINE in _lines(SNAPSHOT)


def test_an_alias_and_a_tuple_of_module_classes_narrow_too():
    code = SNAPSHOT.replace("isinstance(value, torch.nn.Module)", "isinstance(value, (nn.Module,))")
    assert MODULE_LINE not in _lines(code)
    code = SNAPSHOT.replace(
        "isinstance(value, torch.nn.Module)", "key != 'skip' and isinstance(value, nn.Module)"
    )
    assert MODULE_LINE not in _lines(code)


def test_a_rebinding_to_a_tensor_is_reported():
    code = SNAPSHOT.replace(
        "copy.deepcopy(value).eval().requires_grad_(False)", "value.weight.detach()"
    )
    assert MODULE_LINE in _lines(code)
    code = SNAPSHOT.replace("check_consistency(value)", "value = value(torch.ones(1, 4))")
    assert MODULE_LINE in _lines(code)


def test_the_else_branch_and_other_tests_do_not_narrow():
    code = SNAPSHOT.replace(
        "isinstance(value, torch.nn.Module)", "not isinstance(value, torch.nn.Module)"
    )
    assert MODULE_LINE in _lines(code)
    code = SNAPSHOT.replace(
        "isinstance(value, torch.nn.Module)", "isinstance(value, torch.nn.Module) or key"
    )
    assert MODULE_LINE in _lines(code)
    code = SNAPSHOT.replace(
        "isinstance(value, torch.nn.Module)", "isinstance(key, torch.nn.Module)"
    )
    assert MODULE_LINE in _lines(code)
