from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

AMP = """
import torch
import torch.optim as optim
from torch.optim import AdamW

opt = optim.SGD(model.parameters(),
                lr=0.1)  # keep the layout
opt2 = AdamW(model.parameters(), lr=1e-4)
opt3 = torch.optim.Adam(params)
with torch.cuda.amp.autocast():
    loss = model(x)
"""


def test_optimizers_in_an_amp_script_become_syncfree_on_legacy():
    assert [f.span.start.line for f in findings(AMP, "XLA104", "legacy")] == [4, 6, 7]
    expected = src(
        """
        import torch
        import torch.optim as optim
        from torch.optim import AdamW
        from torch_xla.amp.syncfree import SGD
        import torch_xla.amp.syncfree
        from torch_xla.amp.syncfree import Adam

        opt = SGD(model.parameters(),
                        lr=0.1)  # keep the layout
        opt2 = torch_xla.amp.syncfree.AdamW(model.parameters(), lr=1e-4)
        opt3 = Adam(params)
        with torch.cuda.amp.autocast():
            loss = model(x)
        """
    )
    # `AdamW` is already bound to torch.optim's class, so that one is written qualified.
    assert fixed(AMP, "XLA104", target="legacy") == expected
    # Modern: bf16 autocast and no scaler, so nothing for a sync-free optimizer to skip.
    assert findings(AMP, "XLA104") == []


def test_a_grad_scaler_alone_counts_as_amp_and_modern_needs_float16_left():
    code = """
    import torch
    scaler = torch.cuda.amp.GradScaler()
    optimizer = torch.optim.AdamW(model.parameters())
    """
    assert fixed(code, "XLA104", target="legacy") == src(
        """
        import torch
        from torch_xla.amp.syncfree import AdamW
        scaler = torch.cuda.amp.GradScaler()
        optimizer = AdamW(model.parameters())
        """
    )
    assert findings(code, "XLA104") == []
    fp16 = src(code) + "model.half()\n"
    assert len(findings(fp16, "XLA104")) == 1


def test_legacy_syncfree_without_cuda_kernel_switches_is_manual():
    code = """
    import torch
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    with torch.autocast("cuda"):
        pass
    """
    (legacy,) = findings(code, "XLA104", target="legacy")
    assert legacy.fix is None and "fused=" in legacy.manual
    modern = findings(src(code) + "scaler = torch.cuda.amp.GradScaler()\nmodel.half()\n", "XLA104")
    assert len(modern) == 1 and modern[0].fix is not None


def test_no_amp_syncfree_already_or_other_optimizers_report_nothing():
    no_amp = """
    import torch
    optimizer = torch.optim.AdamW(model.parameters())
    """
    converted = """
    import torch
    from torch_xla.amp.syncfree import AdamW
    import torch_xla.amp.syncfree as sf
    optimizer = AdamW(model.parameters())
    o2 = sf.SGD(model.parameters(), lr=0.1)
    o3 = torch.optim.RMSprop(model.parameters())
    with torch.autocast("xla", dtype=torch.bfloat16):
        pass
    """
    for target in ("modern", "legacy"):
        assert findings(no_amp, "XLA104", target) == []
        assert findings(converted, "XLA104", target) == []


def test_hover_names_the_valid_import():
    rule = get_rule("XLA104")
    assert rule is not None
    for key in ("torch.optim.SGD", "torch.optim.Adam", "torch.optim.AdamW"):
        assert "from torch_xla.amp.syncfree import SGD, Adam, AdamW" in rule.hover[key]
        assert "legacy" in rule.hover[key] and "modern" in rule.hover[key]
