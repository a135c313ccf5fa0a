"""XLA102 at the line that derives an autocast's device type from a device string.

``device_type = "cuda" if "cuda" in device else "cpu"`` feeding
``nullcontext() if device_type == "cpu" else torch.autocast(device_type=device_type)``:
once the device is XLA the test is false, ``device_type`` is "cpu" and mixed precision is
silently dropped, whatever the autocast call itself is rewritten to.
"""

from tests.helpers import findings, fixed, src

GUARDED = """
import torch
from contextlib import nullcontext

device = "cuda"
device_type = 'cuda' if 'cuda' in device else 'cpu'
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16)

def get_batch(data):
    x = data[:8]
    if device_type == 'cuda':
        return x.pin_memory().to(device, non_blocking=True)
    return x.to(device)

with ctx:
    loss = model(get_batch(data))
"""


def _derivation(code: str, target: str = "modern"):
    return [f for f in findings(code, "XLA102", target) if "looks for" in f.message]


def test_device_type_test_that_turns_autocast_off_on_xla_is_reported():
    (f,) = _derivation(GUARDED)
    assert "`device_type`" in f.message and "nullcontext" in f.message
    assert "line 6" in f.message  # where the autocast is chosen
    assert f.fix is not None and f.fix.safe, f.fix
    out = fixed(GUARDED, "XLA102")
    assert (
        "device_type = 'cuda' if 'cuda' in device else 'xla' if 'xla' in device else 'cpu'" in out
    )
    # Once fixed, nothing is left to say at the derivation.
    assert _derivation(out) == []


def test_the_fix_keeps_the_original_devices_and_adds_xla():
    out = fixed(GUARDED, "XLA102")
    line = next(s for s in out.splitlines() if s.startswith("device_type ="))
    expr = line.split("=", 1)[1]
    for device, expected in (("cuda", "cuda"), ("cuda:1", "cuda"), ("cpu", "cpu"), ("mps", "cpu")):
        assert eval(expr, {"device": device}) == expected  # noqa: S307
    assert eval(expr, {"device": "xla"}) == "xla"  # noqa: S307
    assert eval(expr, {"device": "xla:0"}) == "xla"  # noqa: S307


def test_a_use_out_of_reach_makes_the_fix_a_review():
    code = GUARDED + "optimizer = model.configure_optimizers(0.1, 6e-4, device_type)\n"
    (f,) = _derivation(code)
    assert not f.fix.safe
    assert "configure_optimizers" in f.fix.review_reason and "line 16" in f.fix.review_reason
    assert fixed(code, "XLA102") == fixed(code, "XLA102")  # idempotent either way
    assert "'xla' if 'xla'" not in fixed(code, "XLA102")
    assert "'xla' if 'xla'" in fixed(code, "XLA102", unsafe=True)


def test_a_use_in_a_function_of_this_file_is_followed():
    code = """
    import torch

    class GPT(torch.nn.Module):
        def configure_optimizers(self, lr, device_type):
            fused = device_type == "cuda"
            return torch.optim.AdamW(self.parameters(), lr=lr, fused=fused)

    device = "cuda"
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    model = GPT()
    optimizer = model.configure_optimizers(6e-4, device_type=device_type)
    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
        loss = model(x)
    """
    (f,) = _derivation(code)
    assert f.fix.safe, f.fix.review_reason
    assert (
        'device_type = "cuda" if device.startswith("cuda") else "xla" if '
        'device.startswith("xla") else "cpu"' in fixed(code, "XLA102")
    )


def test_a_cpu_only_branch_other_than_autocast_makes_it_a_review():
    code = """
    import torch
    device = "cuda"
    device_type = "cuda" if "cuda" in device else "cpu"
    if device_type == "cpu":
        torch.set_num_threads(4)
    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
        loss = model(x)
    """
    (f,) = _derivation(code)
    assert not f.fix.safe and "line 4" in f.fix.review_reason


def test_an_autocast_enabled_only_on_cuda_is_enabled_on_xla_too():
    code = """
    import torch
    device = "cuda"
    device_type = "cuda" if "cuda" in device else "cpu"
    with torch.autocast(device_type=device_type, enabled=(device_type == "cuda")):
        loss = model(x)
    """
    (f,) = _derivation(code)
    assert f.fix.safe, f.fix.review_reason
    assert 'enabled=(device_type in ("cuda", "xla"))' in fixed(code, "XLA102")


LLMC = """
import torch
from contextlib import nullcontext
device = "cuda" if torch.cuda.is_available() else "cpu"
device_type = 'cuda' if 'cuda' in device else 'cpu'
ctx = torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16) if device_type == "cuda" else nullcontext()
"""


def test_llmc_form_the_test_choosing_the_autocast_lets_xla_in():
    """llm.c: ``autocast(...) if device_type == "cuda" else nullcontext()``: the "xla" case
    alone would still pick nullcontext on XLA; the fix rewrites the test as well."""
    (f,) = _derivation(LLMC)
    assert f.fix.safe, f.fix.review_reason
    out = fixed(LLMC, "XLA102")
    assert "else 'xla' if 'xla' in device else 'cpu'" in out
    assert 'if device_type in ("cuda", "xla") else nullcontext()' in out
    assert _derivation(out) == []
    test = 'device_type in ("cuda", "xla")'
    for value, expected in (("cuda", True), ("cpu", False), ("xla", True)):
        assert eval(test, {"device_type": value}) is expected  # noqa: S307


def test_not_equal_and_membership_tests_are_rewritten_the_same_way():
    ne = LLMC.replace(
        'if device_type == "cuda" else nullcontext()', 'if device_type != "cuda" else ctx0'
    ).replace("ctx = torch.amp.autocast(", "ctx = nullcontext() if device_type != 'cuda' else torch.amp.autocast(").replace(
        ' if device_type != "cuda" else ctx0', ""
    )  # fmt: skip
    assert "device_type not in ('cuda', 'xla')" in fixed(ne, "XLA102")
    member = LLMC.replace('device_type == "cuda"', 'device_type in ("cuda", "mps")')
    assert 'device_type in ("cuda", "mps", "xla")' in fixed(member, "XLA102")


def test_an_already_converted_name_with_a_cuda_only_test_is_reported_at_the_test():
    """After the "xla" case is in (an older fix, or by hand), a test still comparing with
    "cuda" keeps the autocast off on XLA: said at the test, with a review fix."""
    code = LLMC.replace(
        "device_type = 'cuda' if 'cuda' in device else 'cpu'",
        "device_type = 'cuda' if 'cuda' in device else 'xla' if 'xla' in device else 'cpu'",
    )
    (f,) = [x for x in findings(code, "XLA102") if "stays off" in x.message]
    assert (
        "if device_type ==" in code.splitlines()[f.span.start.line + 1]
        and not f.fix.safe
        and "fp32" in f.fix.review_reason
    )
    assert 'if device_type in ("cuda", "xla") else' in fixed(code, "XLA102", unsafe=True)
    assert not [
        x
        for x in findings(fixed(code, "XLA102", unsafe=True), "XLA102")
        if "stays off" in x.message
    ]


def test_torch_device_type_comparison_form():
    code = """
    import torch
    from contextlib import nullcontext
    device = torch.device("cuda")
    device_type = "cuda" if device.type == "cuda" else "cpu"
    ctx = torch.autocast(device_type, dtype=torch.bfloat16) if device_type != "cpu" else nullcontext()
    """
    (f,) = _derivation(code)
    assert f.fix.safe
    assert (
        'device_type = "cuda" if device.type == "cuda" else "xla" if device.type == "xla" else "cpu"'
        in fixed(code, "XLA102")
    )


def test_legacy_target_has_no_xla_device_type_in_torch_autocast():
    (f,) = _derivation(GUARDED, target="legacy")
    assert not f.fix.safe and "torch_xla.amp.autocast" in f.fix.review_reason


def test_not_reported_without_an_autocast_or_when_already_handled():
    no_autocast = """
    device = "cuda"
    device_type = "cuda" if "cuda" in device else "cpu"
    if device_type == "cuda":
        x = x.pin_memory()
    """
    assert findings(no_autocast, "XLA102") == []
    cpu_only = """
    import torch
    device = "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"
    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
        pass
    """
    # (the autocast call has its own finding: the test is not evaluated there)
    assert _derivation(cpu_only) == []
    already = """
    import torch
    device = "cuda"
    device_type = "cuda" if "cuda" in device else "xla" if "xla" in device else "cpu"
    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
        pass
    """
    assert _derivation(already) == []


def test_autocast_without_device_type_but_guarded_by_it():
    code = src(
        """
        import torch
        from contextlib import nullcontext

        def main(args):
            device_type = "cuda" if "cuda" in args.device else "cpu"
            ctx = nullcontext() if device_type == "cpu" else torch.cuda.amp.autocast()
            with ctx:
                loss = model(x)
        """
    )
    found = findings(code, "XLA102")
    lines = sorted(f.span.start.line + 1 for f in found)
    assert lines == [5, 6]  # the derivation and the CUDA autocast itself
    (f,) = _derivation(code)
    assert f.fix.safe


def test_an_if_statement_choosing_the_autocast_on_cuda_only_is_a_review():
    code = """
    import torch
    from contextlib import nullcontext
    device = "cuda"
    device_type = "cuda" if "cuda" in device else "cpu"
    if device_type == "cuda":
        ctx = torch.autocast(device_type=device_type, dtype=torch.bfloat16)
    else:
        ctx = nullcontext()
    """
    (f,) = _derivation(code)
    # the branch may hold more than the autocast: review, but the fix is complete
    assert not f.fix.safe and "whole branch" in f.fix.review_reason
    assert 'if device_type in ("cuda", "xla"):' in fixed(code, "XLA102", unsafe=True)


def test_a_name_bound_twice_or_shadowed_by_a_parameter():
    rebound = """
    import torch
    device = "cuda"
    device_type = "cuda" if "cuda" in device else "cpu"
    device_type = device_type.replace("cuda", "cuda:0")
    with torch.autocast(device_type=device_type):
        pass
    """
    assert _derivation(rebound) == []  # which value reaches the autocast is out of reach
    shadowed = """
    import torch
    from contextlib import nullcontext
    device = "cuda"
    device_type = "cuda" if "cuda" in device else "cpu"
    ctx = nullcontext() if device_type == "cpu" else torch.autocast(device_type)

    def configure(device_type):
        if device_type == "cpu":
            torch.set_num_threads(2)
    """
    (f,) = _derivation(shadowed)
    assert f.fix.safe  # configure's parameter is another name, never given this value


def test_an_autocast_switched_off_on_a_followed_device_is_left_alone():
    # BERT-MFT's evaluation (held-out 160's control): float32 loss under an autocast that is
    # off on whatever device the model is on, the XLA device included.
    code = """
    import torch
    import torch.nn.functional as F

    class Evaluator:
        def __init__(self, model):
            self.model = model
            self.device = next(model.parameters()).device

        def loss(self, batch):
            logits = self.model(batch["x"])
            with torch.autocast(self.device.type, enabled=False):
                return F.cross_entropy(logits.float(), batch["y"])
    """
    assert findings(code, "XLA102") == []
    on = code.replace(", enabled=False", "")
    assert [f.code for f in findings(on, "XLA102")] == ["XLA102"]
