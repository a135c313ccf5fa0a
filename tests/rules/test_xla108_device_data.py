"""XLA108, held-out 8 H9 (hlb-CIFAR10): ``torch.save`` of a dict of tensors moved to the
device (a preprocessed dataset cached to disk), no state dict in it."""

from tests.helpers import findings, fixed, src

CODE = """
import torch

train = {}
train["images"], train["labels"] = [t.to(device=device) for t in next(iter(loader))]
evalset = {"images": eval_x.to(device), "labels": eval_y.to(device)}
data = {"train": train, "eval": evalset}
data["train"]["images"] = data["train"]["images"].half()
torch.save(data, "cache.pt")
data = torch.load("cache.pt")
"""


def test_saved_dict_of_device_tensors_is_found_with_advice_and_no_fix():
    (f,) = findings(CODE, "XLA108")
    assert f.span.start.line == 7
    assert "device" in f.message and "xm.save" in f.message
    # The reload: xm.save writes CPU tensors, so what torch.load returns is no longer on
    # the device (measured on PJRT CPU): swapping the save alone is no conversion.
    assert f.fix is None
    assert "line 9" in f.manual and "CPU" in f.manual
    assert fixed(CODE, "XLA108", unsafe=True) == src(CODE)


def test_nested_literal_of_cuda_tensors_is_found():
    code = """
    import torch
    torch.save({"x": x.cuda(), "meta": {"n": 3}}, "x.pt")
    """
    (f,) = findings(code, "XLA108")
    assert f.span.start.line == 1


def test_cpu_data_and_dtype_casts_are_left_alone():
    code = """
    import torch
    data = {"x": x.to(torch.float16), "y": y.cpu(), "z": torch.zeros(3)}
    torch.save(data, "x.pt")
    torch.save({"x": x.to(device).cpu()}, "y.pt")
    """
    assert findings(code, "XLA108") == []


def test_a_name_rebound_to_a_cpu_copy_before_the_save_is_no_device_data():
    # hyp_metric (held-out 161): the loop moves `x` to CUDA, but the save after it writes
    # `x, y = x.float().cpu(), y.long().cpu()`, CPU copies: nothing to report.
    code = """
    import torch

    def run(model, loader, get_emb):
        for x, y in loader:
            x = x.cuda(non_blocking=True)
            model(x).sum().backward()
        x, y = get_emb()
        x, y = x.float().cpu(), y.long().cpu()
        torch.save((x, y), "emb.pt")
    """
    assert findings(code, "XLA108") == []
    kept = code.replace("        x, y = x.float().cpu(), y.long().cpu()\n", "")
    kept = kept.replace("        x, y = get_emb()\n", "")
    assert [f.code for f in findings(kept, "XLA108")] == ["XLA108"]
