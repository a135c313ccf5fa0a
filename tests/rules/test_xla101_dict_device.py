"""A plain CUDA device kept in a settings dict (``cfg = {"run": {"device": "cuda"}}`` or
``cfg["run"]["device"] = "cuda"``) and read where tensors are placed is a device site: the
entry becomes the XLA device, safe only when every read of the entry places something."""

from __future__ import annotations

from tests.helpers import findings, fixed, src

NESTED = """
import torch
from torch import nn

settings = {"run": {"device": "cuda", "epochs": 2}, "opt": {"lr": 0.1}}

feats = torch.ones(16, 4).to(device=settings["run"]["device"])
model = nn.Linear(4, 2).to(settings["run"]["device"])
noise = torch.zeros(16, 2, device=settings["run"]["device"])
for epoch in range(settings["run"]["epochs"]):
    out = model(feats) + noise
print(settings["opt"]["lr"])
"""


def _on_line(fs, text, needle):
    return [f for f in fs if needle in src(text).splitlines()[f.span.start.line]]


def test_literal_dict_entry_is_a_safe_device_site():
    fs = findings(NESTED, "XLA101")
    (f,) = _on_line(fs, NESTED, "settings = {")
    assert f.fix is not None and f.fix.safe, f.message
    out = fixed(NESTED, "XLA101")
    assert 'settings = {"run": {"device": torch_xla.device(), "epochs": 2}' in out
    assert "import torch_xla\n" in out


STORED = """
import torch

cfg = {"train": {}}
cfg["train"]["device"] = "cuda"
cfg["train"]["bs"] = 8


def batch():
    return torch.randn(cfg["train"]["bs"], 3, device=cfg["train"]["device"])


print(batch().sum())
"""


def test_subscript_store_is_a_safe_device_site():
    (f,) = _on_line(findings(STORED, "XLA101"), STORED, 'cfg["train"]["device"] = ')
    assert f.fix.safe, f.message
    assert 'cfg["train"]["device"] = torch_xla.device()' in fixed(STORED, "XLA101")


def test_get_of_the_entry_is_followed():
    code = """
    import torch
    opts = {"device": "cuda:0", "dim": 3}
    x = torch.ones(opts["dim"]).to(opts.get("device"))
    """
    (f,) = findings(code, "XLA101")
    assert f.fix.safe, f.message


def test_string_use_of_the_entry_is_for_review():
    code = """
    import torch
    hp = {"misc": {"device": "cuda"}}
    net = torch.nn.Linear(2, 2).to(hp["misc"]["device"])
    if "cuda" in hp["misc"]["device"]:
        torch.backends.cudnn.benchmark = True
    """
    (f,) = findings(code, "XLA101")
    assert not f.fix.safe and "compared as a string" in f.fix.review_reason
    assert 'hp = {"misc": {"device": "xla"}}' in fixed(code, "XLA101", unsafe=True)
    assert 'hp = {"misc": {"device": "cuda"}}' in fixed(code, "XLA101")


def test_autocast_device_type_from_the_entry_is_for_review():
    code = """
    import torch
    hp = {"device": "cuda"}
    net = torch.nn.Linear(2, 2).to(hp["device"])
    with torch.autocast(device_type=hp["device"], dtype=torch.bfloat16):
        y = net(torch.ones(2, 2, device=hp["device"]))
    """
    (f,) = findings(code, "XLA101")
    assert not f.fix.safe and "device-type string" in f.fix.review_reason


def test_dict_used_whole_is_for_review():
    code = """
    import json
    import torch
    hp = {"device": "cuda", "width": 4}
    net = torch.nn.Linear(hp["width"], 2).to(hp["device"])
    with open("hp.json", "w") as fh:
        json.dump(hp, fh)
    """
    (f,) = findings(code, "XLA101")
    assert not f.fix.safe and "json.dump" in f.fix.review_reason


def test_alias_of_the_inner_dict_is_for_review():
    code = """
    import torch
    hp = {"misc": {"device": "cuda"}}
    misc = hp["misc"]
    net = torch.nn.Linear(2, 2).to(misc["device"])
    """
    (f,) = findings(code, "XLA101")
    assert not f.fix.safe


def test_entry_in_a_function_dict():
    code = """
    import torch

    def main():
        conf = dict()
        conf = {"device": "cuda", "n": 2}
        return torch.zeros(conf["n"], device=conf["device"])
    """
    (f,) = findings(code, "XLA101")
    assert f.fix.safe, f.message


def test_key_that_is_not_a_device_is_left_alone():
    code = """
    import torch
    names = {"backend": "cuda", "precision": "fp32"}
    print(names["backend"])
    """
    assert findings(code, "XLA101") == []


def test_review_of_the_entry_holds_back_the_literal_moves():
    # The entry waits for review: a safe move elsewhere would leave tensors on two devices.
    code = """
    import torch
    hp = {"device": "cuda"}
    data = torch.ones(8, 2).to(hp["device"])
    order = torch.randperm(8, device="cuda")
    print(f"placing on {hp['device'].upper()}")
    """
    fs = findings(code, "XLA101")
    assert len(fs) == 2 and all(not f.fix.safe for f in fs)


def test_entry_and_literal_moves_convert_together():
    code = """
    import torch
    hp = {"device": "cuda"}
    data = torch.ones(8, 2).to(hp["device"])
    order = torch.randperm(8, device="cuda")
    """
    out = fixed(code, "XLA101")
    assert 'hp = {"device": torch_xla.device()}' in out
    assert "torch.randperm(8, device=torch_xla.device())" in out


def test_class_attribute_dict_is_for_review():
    # Read as self.hp[...] in methods: the entry's reads are not followed.
    code = """
    import torch

    class Run:
        hp = {"device": "cuda"}

        def go(self):
            return torch.ones(2).to(self.hp["device"])
    """
    (f,) = findings(code, "XLA101")
    assert not f.fix.safe


def test_availability_picker_in_a_dict_follows_the_entry():
    code = """
    import torch
    hp = {"device": "cuda" if torch.cuda.is_available() else "cpu", "n": 4}
    net = torch.nn.Linear(hp["n"], 1).to(hp["device"])
    """
    (f,) = findings(code, "XLA101")
    assert f.fix.safe, f.message
    assert 'hp = {"device": torch_xla.device(), "n": 4}' in fixed(code, "XLA101")
