"""XLA115 on a map_location carried in a keyword dict unpacked into torch.load (held-out
94's towards-principled-gts): ``load_args = dict(map_location=f"cuda:{device_id}") if
torch.cuda.is_available() else {}`` maps onto CUDA on a GPU host and, on an XLA host, leaves
the load with no map_location at all, so a CUDA-saved checkpoint fails either way. The fix
maps onto the CPU on every host, replacing the conditional too."""

from tests.helpers import findings, fixed, src

GUARDED = """
import torch


def resume(path, model, optimizer, device_id):
    load_args = (
        dict(map_location=f"cuda:{device_id}") if torch.cuda.is_available() else {}
    )
    checkpoint = torch.load(path, weights_only=True, **load_args)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
"""


def test_a_guarded_cuda_map_location_in_an_unpacked_dict_maps_onto_the_cpu_on_every_host():
    (f,) = findings(GUARDED, "XLA115")
    assert f.span.start.line == 5  # 0-based: the dict(...) line
    assert "only when `torch.cuda.is_available()`" in f.message
    assert f.fix.safe, f.fix.review_reason
    out = fixed(GUARDED, "XLA115")
    assert 'load_args = (\n        dict(map_location="cpu")\n    )' in out
    assert "is_available" not in out


def test_a_plain_dict_has_its_cuda_entry_replaced():
    code = """
    import torch
    kwargs = {"map_location": "cuda:0", "weights_only": True}
    state = torch.load("best.pt", **kwargs)
    model.load_state_dict(state)
    """
    (f,) = findings(code, "XLA115")
    assert f.fix.safe and "an XLA host has no CUDA" in f.message
    assert 'kwargs = {"map_location": "cpu", "weights_only": True}' in fixed(code, "XLA115")


def test_review_when_the_dict_or_the_checkpoint_is_used_otherwise():
    shared = GUARDED.replace(
        '    model.load_state_dict(checkpoint["model"])',
        '    model.load_state_dict(checkpoint["model"])\n    log(load_args)',
    )
    (f,) = findings(shared, "XLA115")
    assert not f.fix.safe and "`load_args` is used other than" in f.fix.review_reason
    read = GUARDED + '    return checkpoint["best_score"]\n'
    (g,) = findings(read, "XLA115")
    assert not g.fix.safe and 'checkpoint["best_score"]' in g.fix.review_reason
    assert fixed(read, "XLA115") == src(read)


def test_quiet_on_a_cpu_map_or_a_dict_without_map_location():
    assert findings(GUARDED.replace('f"cuda:{device_id}"', '"cpu"'), "XLA115") == []
    no_map = GUARDED.replace('map_location=f"cuda:{device_id}"', "mmap=True")
    assert findings(no_map, "XLA115") == []
