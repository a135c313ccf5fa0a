"""XLA119: fused=True that reaches the optimizer through ``**extra_args``.

``extra_args = dict(fused=True) if fused_available else dict()`` with ``fused_available``
read from the optimizer's signature is True on every torch that has fused=: on XLA
parameters the optimizer raises when it is built (verified on torch_xla 2.9, PJRT CPU).
"""

from tests.helpers import findings, fixed, src

SIGNATURE = """
import inspect
import torch

model = torch.nn.Linear(4, 1).to("cuda")
fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
extra_args = dict(fused=True) if fused_available else dict()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, **extra_args)
"""


def test_fused_through_a_dict_selected_by_the_signature_test_is_dropped():
    (f,) = findings(SIGNATURE, "XLA119")
    assert f.span.start.line == 5
    assert "AdamW(fused=True)" in f.message and "`**extra_args`" in f.message
    assert f.fix is not None and f.fix.safe
    assert fixed(SIGNATURE, "XLA119") == src(SIGNATURE.replace("dict(fused=True) if", "dict() if"))


def test_a_dict_display_and_an_unconditional_dict():
    code = """
    import torch
    opt_kwargs = {"lr": 1e-3, "fused": True}
    opt = torch.optim.Adam(model.parameters(), **opt_kwargs)
    """
    (f,) = findings(code, "XLA119")
    assert f.fix.safe
    assert fixed(code, "XLA119") == src(code.replace(', "fused": True', ""))


def test_a_dict_used_elsewhere_needs_review():
    code = """
    import torch
    extra_args = dict(fused=True)
    print(f"optimizer options: {extra_args}")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, **extra_args)
    """
    (f,) = findings(code, "XLA119")
    assert not f.fix.safe and "`extra_args`" in f.fix.review_reason


def test_a_dict_chosen_by_another_test_is_left_alone():
    # nanoGPT: use_fused = fused_available and device_type == "cuda" is False on XLA,
    # like the fused=<expression> keyword the rule leaves alone.
    code = """
    import inspect
    import torch
    fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
    use_fused = fused_available and device_type == "cuda"
    extra_args = dict(fused=True) if use_fused else dict()
    opt = torch.optim.AdamW(groups, lr=lr, **extra_args)
    if args.fused:
        more = {"fused": True}
    else:
        more = {}
    opt2 = torch.optim.AdamW(groups, lr=lr, **more)
    other = dict(fused=True)
    run(**other)
    """
    assert findings(code, "XLA119") == []


def test_the_same_review_as_the_keyword_in_low_precision():
    code = SIGNATURE.replace('.to("cuda")', '.to("cuda").to(torch.bfloat16)')
    (f,) = findings(code, "XLA119")
    assert not f.fix.safe and "torch.bfloat16" in f.fix.review_reason
