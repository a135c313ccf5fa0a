import pytest
import torch
from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

CUDA_FORMS = """
import torch

with torch.cuda.amp.autocast(True, torch.float16):
    pass
with torch.autocast("cuda", enabled=use_amp):
    pass
with torch.amp.autocast(device_type="cuda"):
    pass
"""


def test_cuda_autocast_forms_are_reported_as_silent_no_ops():
    found = findings(CUDA_FORMS, "XLA102")
    assert [f.span.start.line for f in found] == [2, 4, 6]
    assert all("silent no-op on XLA tensors" in f.message for f in found)
    assert all(f.fix is not None and f.fix.safe for f in found)


def test_modern_fix_is_bf16_xla_autocast_keeping_enabled_and_explicit_dtype():
    assert fixed(CUDA_FORMS, "XLA102") == src(
        """
        import torch

        with torch.autocast("xla", dtype=torch.float16, enabled=True):
            pass
        with torch.autocast("xla", dtype=torch.bfloat16, enabled=use_amp):
            pass
        with torch.autocast("xla", dtype=torch.bfloat16):
            pass
        """
    )


def test_legacy_fix_is_torch_xla_amp_autocast_with_the_original_arguments():
    assert fixed(CUDA_FORMS, "XLA102", target="legacy") == src(
        """
        import torch
        import torch_xla.amp

        with torch_xla.amp.autocast(True, torch.float16):
            pass
        with torch_xla.amp.autocast(enabled=use_amp):
            pass
        with torch_xla.amp.autocast():
            pass
        """
    )


def test_aliases_are_followed_and_torch_is_imported_when_missing():
    code = """
    from torch.cuda import amp
    from torch.cuda.amp import autocast

    with amp.autocast(cache_enabled=False):
        pass

    @autocast()
    def forward(x):
        return x
    """
    found = findings(code, "XLA102")
    # Lines 0 and 1: the CUDA AMP module import and the import of its name, each pointed at
    # (no fix) beside the use it serves.
    assert [f.span.start.line for f in found] == [0, 1, 3, 6]
    assert found[0].fix is None and found[1].fix is None
    assert "imports from CUDA's AMP module" in found[1].message
    # Both imports served only the converted uses: they go with them (engine/stale_imports).
    assert fixed(code, "XLA102") == src(
        """
        import torch

        with torch.autocast("xla", dtype=torch.bfloat16, cache_enabled=False):
            pass

        @torch.autocast("xla", dtype=torch.bfloat16)
        def forward(x):
            return x
        """
    )


def test_legacy_reuses_an_existing_torch_xla_amp_alias():
    code = """
    import torch
    from torch_xla import amp as xamp

    with torch.cuda.amp.autocast():
        pass
    """
    assert "with xamp.autocast():" in fixed(code, "XLA102", target="legacy")


def test_xla_and_cpu_autocasts_report_nothing():
    code = """
    import torch
    import torch_xla.amp

    with torch.autocast("xla", dtype=torch.bfloat16):
        pass
    with torch.autocast(device_type="xla"):
        pass
    with torch_xla.amp.autocast(device):
        pass
    with torch.autocast("cpu"), torch.cpu.amp.autocast():
        pass
    with torch.autocast(device.type):
        pass
    """
    for target in ("modern", "legacy"):
        assert findings(code, "XLA102", target) == []


def test_hidden_arguments_get_a_manual_step_instead_of_a_fix():
    code = """
    import torch
    with torch.cuda.amp.autocast(**amp_kwargs):
        pass
    """
    (f,) = findings(code, "XLA102")
    assert f.fix is None
    assert 'torch.autocast("xla", dtype=torch.bfloat16)' in f.manual


def test_hover_covers_each_autocast_api_and_both_targets():
    rule = get_rule("XLA102")
    assert rule is not None
    for key in ("torch.cuda.amp.autocast", "torch.autocast", "torch.amp.autocast"):
        text = rule.hover[key]
        assert "no-op" in text and 'torch.autocast("xla", dtype=torch.bfloat16)' in text
        assert "torch_xla.amp.autocast" in text


def test_device_type_variables_that_can_be_cuda_become_xla():
    code = """
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = torch.device("cuda")

    def step(x):
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            a = model(x)
        with torch.autocast(dev.type):
            b = model(x)
        with torch.amp.autocast(device_type=device, enabled=True):
            c = model(x)
        with torch.autocast(gpu.type):
            d = model(x)
    """
    # (the derivation of device_type has its own finding: test_xla102_device_type.py)
    found = [f for f in findings(code, "XLA102") if "looks for" not in f.message]
    assert len(found) == 4
    # Pickers with a CPU fallback: right only once the picker is converted (review).
    assert [f.fix.safe for f in found] == [False, False, False, False]
    assert "can be cpu, cuda" in found[0].fix.review_reason
    # `gpu` can only be CUDA, but XLA101 leaves its move to the XLA device for review (it
    # goes together with the picker's): "xla" alone would switch the CUDA autocast off.
    assert "once `gpu` is the XLA device" in found[3].fix.review_reason
    assert "line 6" in found[3].fix.review_reason
    assert fixed(code, "XLA102").count('torch.autocast("xla"') == 0
    out = fixed(code, "XLA102", unsafe=True)
    assert 'with torch.autocast("xla", dtype=torch.bfloat16):\n        d = model(x)' in out


def test_autocast_of_a_cuda_only_device_follows_its_device_fix():
    code = """
    import torch

    device = torch.device("cuda")
    model = model.to(device)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        loss = model(x)
    """
    (found,) = findings(code, "XLA102")
    assert found.fix.safe  # XLA101 makes `device` the XLA device with a safe fix
    assert 'with torch.autocast("xla", dtype=torch.bfloat16):' in fixed(code, "XLA102")
    # The same device compared with "cuda" elsewhere: XLA101 waits for review, so does this.
    held = code + '    use_amp = device.type == "cuda"\n'
    (found,) = findings(held, "XLA102")
    assert not found.fix.safe
    assert "XLA101's fix, which is left for review" in found.fix.review_reason


def test_converted_picker_needs_no_autocast_change():
    code = """
    import torch
    import torch_xla
    device = torch_xla.device()
    with torch.autocast(device.type):
        pass
    """
    assert findings(code, "XLA102") == []


def test_argparse_device_default_is_followed():
    code = """
    import argparse
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda:0")
    args = p.parse_args()
    with torch.autocast(device_type=args.device):
        pass
    """
    (f,) = findings(code, "XLA102")
    assert f.fix.safe  # "cuda:0" only: the script cannot run anywhere else


def test_device_parameter_is_fixed_only_for_review():
    code = """
    import torch

    def train(model, device, amp):
        with torch.autocast(device.type if device.type != "mps" else "cpu", enabled=amp):
            pass
    """
    (f,) = findings(code, "XLA102")
    assert not f.fix.safe and "device.type" in f.fix.review_reason
    assert fixed(code, "XLA102") == src(code)


def test_cpu_and_xla_device_types_are_left_alone():
    code = """
    import torch
    import torch_xla
    device_type = "xla"
    with torch.autocast(device_type=device_type):
        pass
    with torch.autocast("cpu", dtype=torch.bfloat16):
        pass

    def f(device):
        with torch.autocast(device.type):
            pass
    """
    assert findings(code, "XLA102") == []


def test_uncalled_cuda_autocast_reference_is_reported_without_fix():
    code = """
    import torch
    from contextlib import nullcontext
    autocast = torch.cuda.amp.autocast if use_fp16 else nullcontext
    with autocast():
        pass
    """
    (f,) = findings(code, "XLA102")
    assert f.fix is None and "where this autocast is called" in f.manual


def test_the_cuda_amp_module_import_is_pointed_at_with_its_uses():
    code = """
    import torch.cuda.amp as amp

    scaler = amp.GradScaler()
    with amp.autocast(enabled=use_amp):
        loss = model(x)
    with amp.autocast():
        loss = model(x)
    """
    imp = [f for f in findings(code, "XLA102") if f.span.start.line == 0]
    (f,) = imp
    assert f.fix is None and "remove this import" in f.manual
    assert "a CUDA GradScaler (line 3, XLA103) and a CUDA autocast (line 4, 6, XLA102)" in (
        f.message
    )
    # The uses are converted where they are; the import stays (the scaler still needs it
    # until its own fix, which is for review, is applied).
    assert fixed(code, "XLA102").startswith("import torch.cuda.amp as amp\nimport torch\n")


@pytest.mark.parametrize(
    "code",
    [
        # binds ``torch``, not the module: its uses are reported where they are called
        "import torch.cuda.amp\nwith torch.cuda.amp.autocast():\n    pass\n",
        # imported, never used: nothing to convert
        "from torch.cuda import amp\n",
        # the name is rebound before use
        "from torch.cuda import amp\nimport apex.amp as amp\namp.initialize(m, o)\n",
        # the device-generic module
        "from torch import amp\nwith amp.autocast('xla'):\n    pass\n",
    ],
)
def test_other_amp_imports_are_not_pointed_at(code: str):
    assert [f for f in findings(code, "XLA102") if f.span.start.line == 0] == []


def test_from_torch_cuda_import_amp_with_a_custom_decorator():
    code = """
    from torch.cuda import amp as cuda_amp

    @cuda_amp.custom_fwd
    def forward(ctx, x):
        return x
    """
    (f,) = findings(code, "XLA102")
    assert f.span.start.line == 0
    assert (
        "through `cuda_amp` the script uses torch.cuda.amp.custom_fwd (line 3), which does not"
        in f.message
    )


def test_a_cuda_autocast_waits_while_the_script_stays_on_cuda():
    # The device is also compared with "cuda": XLA101 waits for review, so the tensors stay on
    # CUDA after Convert, where an "xla" autocast would switch the original's autocast off.
    code = """
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device)
    scaler = torch.cuda.amp.GradScaler(enabled=device == "cuda")
    for x in loader:
        with torch.cuda.amp.autocast():
            loss = model(x.to(device)).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    """
    (autocast,) = [f for f in findings(code, "XLA102") if f.fix is not None]
    assert not autocast.fix.safe
    assert "XLA101's change at line 3" in autocast.fix.review_reason
    # The scaler that autocast relies on stays with it.
    (scaler,) = findings(code, "XLA103")
    assert not scaler.fix.safe and "CUDA autocast at line 7 stays" in scaler.fix.review_reason
    out = fixed(code)
    assert "torch.cuda.amp.autocast()" in out and "scaler.step(optimizer)" in out


def test_an_autocast_on_accelerates_device_type_follows_it_already() -> None:
    # diffusers' examples (held-out 37): ``torch.autocast(accelerator.device.type)`` is the
    # XLA autocast when accelerate runs on XLA; "xla" written in would break its CUDA runs.
    from tests.helpers import findings

    code = """
    import torch
    from accelerate import Accelerator

    accelerator = Accelerator(mixed_precision="bf16")


    def validate(pipeline, prompts):
        with torch.autocast(accelerator.device.type):
            return [pipeline(p) for p in prompts]
    """
    assert findings(code, "XLA102") == []
    other = code.replace("accelerator.device.type", "pipeline.device.type")
    assert [f.code for f in findings(other, "XLA102")] == ["XLA102"]


def test_a_kept_float16_is_said_beside_the_bfloat16_advice():
    # Held-out 42 (MedSAM): the message advised bfloat16 while the fix kept float16.
    code = """
    import torch

    def step(model, x):
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            return model(x)
    """
    (f,) = findings(code, "XLA102")
    assert f.fix is not None and "float16" in f.fix.title
    assert "the fix keeps the script's float16" in f.message
    bf16 = code.replace("torch.float16", "torch.bfloat16")
    (g,) = findings(bf16, "XLA102")
    assert "keeps the script's float16" not in g.message


def test_an_autocast_an_and_never_enters_is_not_reported():
    code = """
    import torch
    with torch.autocast("cuda") and (torch.inference_mode() if val else torch.enable_grad()):
        out = model(x)
    with torch.autocast("cuda") or nullcontext():
        out = model(x)
    """
    (f,) = findings(code, "XLA102")
    assert f.span.start.line == 3  # 0-based; the ``or`` enters the autocast: reported


def test_a_dtype_name_chosen_from_the_device_string_becomes_bfloat16_for_review():
    """Held-out 154's esm2 classifier: ``dtype = torch.bfloat16 if "cuda" in args.device and
    is_bf16_supported() else torch.float32``: on the XLA device the choice gives float32, and an
    "xla" autocast of float32 turns itself off; the fix names bfloat16 and waits for review."""
    code = """
    import torch
    from torch.amp import autocast

    device = "cuda"
    dtype = torch.bfloat16 if "cuda" in device and torch.cuda.is_bf16_supported() else torch.float32
    ctx = autocast(device_type=device, dtype=dtype)
    """
    (f,) = findings(code, "XLA102")
    assert f.fix is not None and not f.fix.safe
    assert "the dtype was chosen from the device" in f.fix.review_reason
    assert 'torch.autocast("xla", dtype=torch.bfloat16)' in f.fix.ops[0].code
    plain = code.replace(
        'torch.bfloat16 if "cuda" in device and torch.cuda.is_bf16_supported() else torch.float32',
        "torch.bfloat16",
    )
    (g,) = findings(plain, "XLA102")
    assert "the dtype was chosen" not in (g.fix.review_reason or "")


def test_a_float32_autocast_is_said_to_stay_float32():
    """Held-out 156's video VAE: ``autocast(dtype=torch.float32)``; the message named bfloat16
    while the fix kept float32 (XLA's autocast refuses float32 and turns itself off)."""
    code = """
    import torch

    with torch.cuda.amp.autocast(dtype=torch.float32):
        pass
    """
    (f,) = findings(code, "XLA102")
    assert "float32 either way, no mixed precision" in f.message
    assert "dtype=torch.float32" in f.fix.ops[0].code
    with pytest.warns(UserWarning, match="XLA autocast"):
        assert not torch.autocast("xla", dtype=torch.float32)._enabled


def test_an_import_of_cuda_amp_names_is_pointed_at_while_they_are_used():
    # Held-out 163's table-recognition script: `from torch.cuda.amp import autocast,
    # GradScaler` chooses CUDA's AMP where the module import would.
    code = """
    import torch
    from torch.cuda.amp import autocast, GradScaler

    scaler = GradScaler()
    with autocast():
        pass
    """
    (imp,) = [f for f in findings(code, "XLA102") if f.span.start.line == 1]
    assert imp.fix is None
    assert "(`autocast`, line 5, XLA102)" in imp.message
    assert "(`GradScaler`, line 4, XLA103)" in imp.message
    converted = fixed(code)
    assert "torch.cuda.amp" not in converted
    assert not [f for f in findings(converted, "XLA102") if "imports from" in f.message]
