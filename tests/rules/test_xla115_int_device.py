"""XLA115, held-out 14 (airbench): ``map_location=torch.device(gpu)`` with an integer index
(a parameter defaulting to 0) loads onto CUDA device 0."""

from tests.helpers import findings, src

LOADER = src("""
import torch

class GpuData:
    def __init__(self, path, gpu=0):
        data = torch.load(path, map_location=torch.device(gpu))
        self.x = data["x"]

def load_plain(path, where="cpu"):
    return torch.load(path, map_location=torch.device(where))
""")


def test_an_integer_device_index_is_a_cuda_load():
    (f,) = findings(LOADER, "XLA115")
    assert LOADER.splitlines()[f.span.start.line].strip().startswith("data = torch.load")
    assert f.fix is not None and 'map_location="cpu"' in f.fix.title
