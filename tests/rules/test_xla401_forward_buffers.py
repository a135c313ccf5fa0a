"""XLA401/XLA402: a module's forward that reads its own buffer on the host and writes at that
offset (held-out 17, MoCo's queue pointer: one device->host read per step; measured 4 graphs in
8 steps for offsets 0, 4, 8, 12 against 1 with index_copy_ at a device index)."""

from tests.helpers import findings

QUEUE = """
import torch
import torch.nn as nn

class Queue(nn.Module):
    def __init__(self, dim=4, size=16):
        super().__init__()
        self.size = size
        self.register_buffer("bank", torch.zeros(dim, size))
        self.register_buffer("pos", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def push(self, feats):
        p = int(self.pos)
        n = feats.shape[0]
        self.bank[:, p:p + n] = feats.T
        self.pos[0] = (p + n) % self.size

    def forward(self, x):
        self.push(x.detach())
        return x @ self.bank
"""


def test_host_read_of_a_buffer_in_a_method_forward_calls():
    (f,) = findings(QUEUE, "XLA401")
    assert f.span.start.line + 1 == 13 and f.fix is None
    assert "`self.pos`" in f.message and "push(), which forward() calls" in f.message


def test_slice_at_that_offset_recompiles():
    (f,) = findings(QUEUE, "XLA402")
    assert f.span.start.line + 1 == 15
    assert "the slice offset `p` comes from `self.pos` (line 13)" in f.message


def test_a_method_forward_never_calls_and_a_plain_attribute_are_not_reads():
    code = """
    import torch
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.zeros(()))
            self.width = 4
        def report(self):
            return int(self.steps)
        def forward(self, x):
            return x[:, : int(self.width)]
    """
    assert findings(code, "XLA401") == [] and findings(code, "XLA402") == []
