from tests.helpers import findings, fixed, src

CODE = """
import torch
from torch.optim import AdamW

device = "cuda"
model = torch.nn.Linear(4, 2).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)  # fast on A100
sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)
aliased = AdamW(
    model.parameters(),
    fused=True,
    weight_decay=0.1,
)
"""


def test_fused_true_is_dropped_and_comments_survive():
    found = findings(CODE, "XLA119")
    assert [f.span.start.line + 1 for f in found] == [6, 7, 8]
    assert all(f.fix is not None and f.fix.safe for f in found)
    assert "AdamW(fused=True)" in found[0].message and "RuntimeError" in found[0].message
    assert fixed(CODE, "XLA119") == src(
        """
        import torch
        from torch.optim import AdamW

        device = "cuda"
        model = torch.nn.Linear(4, 2).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)  # fast on A100
        sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        aliased = AdamW(
            model.parameters(),
            weight_decay=0.1,
        )
        """
    )


def test_expressions_and_working_switches_are_left_alone():
    code = """
    import inspect
    import torch

    fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
    use_fused = fused_available and device_type == "cuda"
    a = torch.optim.AdamW(params, fused=use_fused)
    b = torch.optim.AdamW(params, fused=False)
    c = torch.optim.AdamW(params, foreach=True, capturable=True)
    d = torch.optim.RMSprop(params, foreach=True)
    e = torch.optim.Adam(params, **optimizer_kwargs)
    """
    assert findings(code, "XLA119") == []


def test_hover_speaks_about_the_keyword():
    from xla_lens.rules.registry import get_rule

    rule = get_rule("XLA119")
    assert rule is not None and "torch.optim.AdamW(fused=)" in rule.hover


def test_low_precision_weights_or_a_device_left_on_cuda_make_it_review():
    bf16 = """
    import torch

    device = "cuda"
    model = GPT(cfg).to(device).to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        pass
    """
    (f,) = findings(bf16, "XLA119")
    assert not f.fix.safe and "line 4 keeps tensors in torch.bfloat16" in f.fix.review_reason
    # An autocast's bf16 alone keeps fp32 weights: safe.
    fp32 = bf16.replace(".to(torch.bfloat16)", "")
    (f,) = findings(fp32, "XLA119")
    assert f.fix.safe
    # The device picker waits for review (the device is also compared with "cuda"): the
    # parameters stay on CUDA after Convert, where the fused kernel still runs.
    held = fp32 + '    use_amp = device == "cuda"\n'
    (f,) = findings(held, "XLA119")
    assert not f.fix.safe and "XLA101's change at line 3" in f.fix.review_reason
