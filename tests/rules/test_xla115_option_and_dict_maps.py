"""XLA115 on two more spellings of a CUDA ``map_location`` (held-out 42): the script's device
from an option defaulting to CUDA (MedSAM: ``device = torch.device(args.device)`` with
``--device`` "cuda:0", so once XLA101 makes the default "xla" ``torch.load(...,
map_location=device)`` raises "don't know how to restore data location ... (tagged with
xla)", measured on torch_xla 2.9), and a dict that remaps storages onto CUDA (hubert:
``map_location={"cuda:0": f"cuda:{rank}"}``, also through ``torch.hub.load_state_dict_from_url``).
Loading on the CPU and letting load_state_dict copy onto the device keeps the CUDA run's
result."""

from tests.helpers import findings, fixed

OPTION = """
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
parser.add_argument("--device", type=str, default="cuda:0")
args = parser.parse_args()
device = torch.device(args.device)


def resume(model, optimizer):
    checkpoint = torch.load(args.resume, map_location=device)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
"""


def test_the_scripts_device_from_a_cuda_option_default():
    (f,) = findings(OPTION, "XLA115")
    assert "script's device" in f.message
    assert f.fix.safe, f.fix.review_reason
    assert 'torch.load(args.resume, map_location="cpu")' in fixed(OPTION, "XLA115")


def test_an_option_defaulting_to_the_cpu_is_left_alone():
    assert findings(OPTION.replace('default="cuda:0"', 'default="cpu"'), "XLA115") == []


DICT_MAP = """
import torch


def resume(path, model, rank):
    checkpoint = torch.load(path, map_location={"cuda:0": f"cuda:{rank}"})
    model.load_state_dict(checkpoint["model"])
"""


def test_a_dict_remapping_storages_onto_cuda():
    (f,) = findings(DICT_MAP, "XLA115")
    assert "restores storages onto CUDA" in f.message
    assert f.fix.safe, f.fix.review_reason
    assert 'torch.load(path, map_location="cpu")' in fixed(DICT_MAP, "XLA115")


def test_a_dict_remapping_onto_the_cpu_is_left_alone():
    assert findings(DICT_MAP.replace('f"cuda:{rank}"', '"cpu"'), "XLA115") == []


def test_a_hub_download_with_a_cuda_map_location():
    code = """
    import torch

    def warmstart(model, rank):
        state = torch.hub.load_state_dict_from_url(URL, map_location={"cuda:0": f"cuda:{rank}"})
        model.load_state_dict(state)
        other = torch.hub.load_state_dict_from_url(URL, "cache", "cuda:0")
        model.load_state_dict(other)
    """
    assert [f.span.start.line for f in findings(code, "XLA115")] == [3, 5]


def test_a_device_rewrapped_in_torch_device_is_still_the_scripts_device():
    # pre-training-gpt2 (held-out 45): the picker's string, then torch.device of itself.
    code = """
    import torch
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    device = torch.device(device)
    model = torch.nn.Linear(2, 2).to(device)
    saved = torch.load(path, map_location=device)
    model.load_state_dict(saved['model'])
    """
    (f,) = findings(code, "XLA115")
    assert "the script's device `device`" in f.message
    assert 'map_location="cpu"' in fixed(code, "XLA115")


PERCENT_DICT = """
import torch


class Trainer:
    def __init__(self, net, local_rank):
        self.net = net
        self.local_rank = local_rank

    def load_network(self, path):
        map_location = 'cuda:%d' % self.local_rank
        weights = torch.load(path, map_location={'cuda:0': map_location})
        self.net.load_state_dict(weights)
"""


def test_a_dict_onto_a_percent_formatted_cuda_device():
    # XMem's trainer (held-out 47): ``'cuda:%d' % self.local_rank`` through a name.
    (f,) = findings(PERCENT_DICT, "XLA115")
    assert "restores storages onto CUDA" in f.message and f.fix.safe
    assert 'torch.load(path, map_location="cpu")' in fixed(PERCENT_DICT, "XLA115")
    cpu = PERCENT_DICT.replace("'cuda:%d' % self.local_rank", "'cpu'")
    assert findings(cpu, "XLA115") == []


SAFETENSORS = """
import torch
from safetensors.torch import load_file


class Trainer:
    def __init__(self, model, device):
        self.model = model.to(device)
        self.device = device

    def resume(self, path):
        states = load_file(f"{path}/model.safetensors", self.device.index)
        self.model.load_state_dict(states)

    def resume_cuda(self, path):
        self.model.load_state_dict(load_file(path, device="cuda:0"))

    def resume_cpu(self, path):
        self.model.load_state_dict(load_file(path, device="cpu"))
"""


def test_safetensors_loads_onto_a_cuda_index_or_device():
    # held-out 48: `load_file(..., self.device.index)`; converted, the index of xla:0 is 0,
    # which safetensors takes as cuda:0 (raises on a host without CUDA).
    found = findings(SAFETENSORS, "XLA115")
    assert len(found) == 2 and all(f.fix.safe for f in found)
    assert "integer device index" in found[0].message
    out = fixed(SAFETENSORS, "XLA115")
    assert 'load_file(f"{path}/model.safetensors", "cpu")' in out
    assert 'load_file(path, device="cpu"))' in out
