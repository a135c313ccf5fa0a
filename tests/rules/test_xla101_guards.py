"""XLA101: a move that runs only under a test for CUDA never runs on an XLA host, so its
rewrite alone leaves the model on the CPU: the fix waits for review and names the guard."""

from tests.helpers import findings


def test_move_under_a_device_type_test_in_a_helper_handed_the_device_needs_review():
    # held-out 17 (3D-ResNets model.py): the only model move, in a helper handed the device.
    code = """
    import torch.nn as nn
    def place(net, device):
        if device.type == "cuda":
            net = net.cuda()
        return net
    """
    (f,) = [f for f in findings(code, "XLA101") if ".cuda()" in f.message]
    assert f.fix is not None and not f.fix.safe
    assert 'if device.type == "cuda":' in f.fix.review_reason


def test_move_under_a_test_against_the_cpu_stays_safe():
    code = """
    import torch
    def place(net, device):
        if device.type != "cpu":
            net = net.cuda()
        return net
    """
    (f,) = [f for f in findings(code, "XLA101") if ".cuda()" in f.message]
    assert f.fix is not None and f.fix.safe
