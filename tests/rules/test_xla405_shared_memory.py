"""XLA405: share_memory() on what the script places on its device raises on XLA
("_share_fd_: only available on CPU"; a no-op for CUDA tensors). Held-out 32, DeepRL."""

from xla_lens.rules.base import Severity

from tests.helpers import findings

HOGWILD = """
import torch
import torch.nn as nn

device = torch.device("cuda")
net = nn.Linear(8, 2).to(device)
net.share_memory()
"""


def test_a_module_moved_to_the_device_then_shared_is_a_warning():
    [found] = findings(HOGWILD, "XLA405")
    assert found.span.start.line == 5
    assert found.severity == Severity.WARNING
    assert "_share_fd_" in found.message and found.fix is None and found.manual


def test_a_module_from_a_factory_is_information():
    code = """
    import torch

    class Agent:
        def __init__(self, config):
            self.network = config.network_fn()
            self.network.share_memory()
            self.batch = torch.zeros(4, device="cuda")
    """
    [found] = findings(code, "XLA405")
    assert found.severity == Severity.INFORMATION
    assert "if `self.network` is on the device" in found.message


def test_a_cpu_hogwild_script_is_left_alone():
    code = """
    import torch.nn as nn

    net = nn.Linear(8, 2)
    net.share_memory()
    """
    assert not findings(code, "XLA405")
