"""A device that a ``torch.load`` map_location reads: converted to the XLA device, the load
fails (torch.load cannot restore onto it: "don't know how to restore data location ...
tagged with xla:0", measured). XLA101's device fix was safe and Convert broke such loads
(``device = torch.device("cuda" if ... else "cpu")`` ... ``torch.load(p, map_location=device)``:
on an XLA host the original loaded on the CPU). Now XLA115 loads them on the CPU, and the
device fix is safe only where that load fix is."""

import io

import pytest
import torch

from tests.helpers import findings, fixed

PICKED = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(3, 1).to(device)
model.load_state_dict(torch.load("ckpt.pt", map_location=device))
"""


def test_a_picked_device_read_by_a_load_into_load_state_dict_converts_safely() -> None:
    (load,) = findings(PICKED, "XLA115")
    assert load.fix is not None and load.fix.safe and "the script's device" in load.message
    (device,) = findings(PICKED, "XLA101")
    assert device.fix is not None and device.fix.safe
    out = fixed(PICKED)
    assert 'torch.load("ckpt.pt", map_location="cpu")' in out and "torch_xla.device()" in out


def test_a_checkpoint_read_directly_keeps_the_device_fix_for_review() -> None:
    code = PICKED.replace(
        'model.load_state_dict(torch.load("ckpt.pt", map_location=device))',
        'ckpt = torch.load("ckpt.pt", map_location=device)\nscale = ckpt["scale"] * 2',
    )
    (device,) = findings(code, "XLA101")
    assert device.fix is not None and not device.fix.safe
    assert "torch.load cannot restore a checkpoint onto the XLA device" in device.message


def test_an_option_device_through_torch_device_into_a_load_converts_with_the_load() -> None:
    # Held-out 42 (MedSAM): XLA115 now loads such a checkpoint on the CPU, so the default's
    # change is safe with it, as for a picked device.
    code = """
    import argparse
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    device = torch.device(args.device)
    model = torch.nn.Linear(3, 1).to(device)
    model.load_state_dict(torch.load("ckpt.pt", map_location=device))
    """
    (load,) = findings(code, "XLA115")
    assert load.fix is not None and load.fix.safe and "the script's device" in load.message
    (f,) = findings(code, "XLA101")
    assert f.fix is not None and f.fix.safe, f.fix.review_reason
    out = fixed(code)
    assert 'map_location="cpu"' in out and 'default="xla"' in out
    # A checkpoint read other than through load_state_dict keeps both for review.
    direct = code.replace(
        'model.load_state_dict(torch.load("ckpt.pt", map_location=device))',
        'ckpt = torch.load("ckpt.pt", map_location=device)\n    scale = ckpt["scale"] * 2',
    )
    (f,) = findings(direct, "XLA101")
    assert f.fix is not None and not f.fix.safe
    assert "torch.load cannot restore a checkpoint onto the XLA device" in f.message


def test_torch_load_really_refuses_the_xla_device() -> None:
    torch_xla = pytest.importorskip("torch_xla")
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buffer)
    buffer.seek(0)
    with pytest.raises(RuntimeError, match="restore data location"):
        torch.load(buffer, map_location=torch_xla.device())


def test_a_load_onto_the_device_type_converts_with_the_load() -> None:
    # Held-out 51 (SimCLR's --reload): ``map_location=args.device.type`` is "cuda", then "xla"
    # once the device is converted, which torch.load cannot restore onto. XLA115 loads it on
    # the CPU, and the device fix is safe with it.
    code = PICKED.replace("map_location=device)", "map_location=device.type)")
    (load,) = findings(code, "XLA115")
    assert load.fix is not None and load.fix.safe and "device.type" in load.message
    (device,) = findings(code, "XLA101")
    assert device.fix is not None and device.fix.safe
    out = fixed(code)
    assert 'torch.load("ckpt.pt", map_location="cpu")' in out and "torch_xla.device()" in out


def test_a_checkpoint_loaded_onto_the_device_type_and_read_directly_needs_review() -> None:
    code = PICKED.replace(
        'model.load_state_dict(torch.load("ckpt.pt", map_location=device))',
        'ckpt = torch.load("ckpt.pt", map_location=device.type)\nscale = ckpt["scale"] * 2',
    )
    (device,) = findings(code, "XLA101")
    assert device.fix is not None and not device.fix.safe
    assert "torch.load cannot restore a checkpoint onto the XLA device" in device.message


def test_a_device_handed_to_a_loaders_map_location_waits_for_review():
    # Held-out 61's ddpm-torch: `--train-device` (default "cuda:0") reaches
    # `trainer.load_checkpoint(path, map_location=train_device)`, a torch.load of another
    # module: with the XLA device there the load raises. The message spells the flag as typed.
    code = """
    import argparse
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--train-device", default="cuda:0", type=str)
    args = p.parse_args()
    train_device = torch.device(args.train_device)
    trainer.load_checkpoint("ckpt.pt", map_location=train_device)
    """
    (f,) = findings(code, "XLA101")
    assert f.message.startswith("--train-device defaults to a CUDA device")
    assert not f.fix.safe and "passed as map_location to trainer.load_checkpoint()" in (
        f.fix.review_reason
    )


def test_an_abbreviated_device_option_is_the_device_too():
    # DRL-Pytorch's DQN (held-out 71): `--dvc` default 'cuda', then
    # `opt.dvc = torch.device(opt.dvc)` goes to the agent.
    code = """
    import argparse
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--dvc", type=str, default="cuda", help="running device: cuda or cpu")
    p.add_argument("--dev_file", type=str, default="data/dev.json")
    opt = p.parse_args()
    opt.dvc = torch.device(opt.dvc)
    net = torch.nn.Linear(2, 2).to(opt.dvc)
    """
    (f,) = findings(code, "XLA101")
    assert f.message.startswith("--dvc defaults to a CUDA device") and f.span.start.line == 3
