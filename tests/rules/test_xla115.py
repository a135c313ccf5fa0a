from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

RESUME = """
import torch

def resume(args, model, optimizer):
    loc = "cuda:{}".format(args.gpu)
    checkpoint = torch.load(args.resume, map_location=loc)
    args.start_epoch = checkpoint["epoch"]
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    if "scaler" in checkpoint:
        print("scaler state present")
"""


def test_a_checkpoint_used_through_load_state_dict_loads_on_the_cpu_safely():
    (f,) = findings(RESUME, "XLA115")
    assert f.fix.safe
    assert 'torch.load(args.resume, map_location="cpu")' in fixed(RESUME, "XLA115")


def test_every_spelling_of_a_cuda_map_location():
    code = """
    import torch
    a = torch.load(p, map_location="cuda:0")
    b = torch.load(p, map_location=f"cuda:{rank}")
    c = torch.load(p, "cuda")
    d = torch.load(p, map_location=torch.device("cuda", rank))
    e = torch.load(p, map_location="cpu")
    f = torch.load(p)
    """
    assert [f.span.start.line + 1 for f in findings(code, "XLA115")] == [2, 3, 4, 5]


def test_a_loaded_tensor_or_whole_model_needs_review():
    code = """
    import torch
    ckpt = torch.load(path, map_location="cuda:0")
    best_acc1 = ckpt["best_acc1"]
    model = torch.load(other, map_location="cuda:0")
    model.eval()
    """
    first, second = findings(code, "XLA115")
    assert not first.fix.safe and 'ckpt["best_acc1"]' in first.fix.review_reason
    assert not second.fix.safe and "needs review" in second.message
    assert fixed(code, "XLA115") == src(code)


def test_rule_metadata():
    rule = get_rule("XLA115")
    assert rule is not None and rule.has_fix and "torch.load" in rule.hover
