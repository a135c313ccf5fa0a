from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

CODE = """
import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM

def build(mixed_precision_type="fp16", amp=False):
    return Accelerator(mixed_precision=mixed_precision_type if amp else "no")

model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.float16)
weight_dtype = torch.float32
if accelerator.mixed_precision == "fp16":
    weight_dtype = torch.float16
pipe_dtype = torch.float16 if device.type == "cuda" else torch.float32
parser.add_argument("--weight_dtype", default="fp16", choices=["no", "fp16", "bf16"])
with torch.autocast("cuda", dtype=torch.float16):
    pass
"""


def test_float16_precision_choices_are_found_but_not_comparisons_or_choices():
    found = findings(CODE, "XLA114")
    lines = [f.span.start.line + 1 for f in found]
    # The default, the keyword, the assignments and the argparse default; not the
    # comparison (line 10), not `choices`, not autocast (XLA102's).
    assert lines == [5, 8, 11, 12, 13]
    for f in found:
        assert f.fix is not None and not f.fix.safe and "mantissa" in f.fix.review_reason


def test_the_fix_is_review_only_and_writes_bfloat16():
    assert fixed(CODE, "XLA114") == src(CODE)
    out = fixed(CODE, "XLA114", unsafe=True)
    assert 'def build(mixed_precision_type="bf16", amp=False):' in out
    assert "torch_dtype=torch.bfloat16" in out
    assert "    weight_dtype = torch.bfloat16" in out
    assert "pipe_dtype = torch.bfloat16 if device.type" in out
    assert 'default="bf16", choices=["no", "fp16", "bf16"]' in out
    assert 'Accelerator(mixed_precision=mixed_precision_type if amp else "no")' in out
    assert 'if accelerator.mixed_precision == "fp16":' in out
    assert "dtype=torch.float16):" in out  # autocast is left to XLA102


def test_bfloat16_and_float32_code_is_quiet():
    code = """
    import torch
    model = load(torch_dtype=torch.bfloat16)
    dtype = torch.float32
    parser.add_argument("--dtype", default="bfloat16", choices=["float16", "bfloat16"])
    """
    assert findings(code, "XLA114") == []


def test_rule_metadata():
    rule = get_rule("XLA114")
    assert rule is not None and rule.has_fix and "torch.float16" in rule.hover


def test_accelerate_and_trainer_mixed_precision_are_left_to_xla304():
    code = """
    from accelerate import Accelerator
    acc = Accelerator(mixed_precision="fp16")
    parser.add_argument("--mixed_precision", default="fp16")
    """
    assert findings(code, "XLA114") == []
    assert {f.code for f in findings(code)} >= {"XLA304"}


def test_a_choice_between_float16_and_bfloat16_becomes_bfloat16():
    # held-out 66's Firefly: ``torch.float16 if training_args.fp16 else torch.bfloat16`` would
    # have become ``torch.bfloat16 if training_args.fp16 else torch.bfloat16``.
    code = """
    import torch
    dtype = torch.float16 if training_args.fp16 else torch.bfloat16
    amp_dtype = torch.float16 if use_half() else torch.bfloat16
    """
    first, second = findings(code, "XLA114")
    out = fixed(code, "XLA114", unsafe=True)
    assert "dtype = torch.bfloat16\n" in out
    # a test that calls something keeps running: only the float16 branch changes
    assert "amp_dtype = torch.bfloat16 if use_half() else torch.bfloat16\n" in out


def test_a_script_written_for_xla_by_hand_chose_its_precision():
    """BigGAN's TPU port (held-out 105) keeps an opt-in ``G.half()``: a dtype policy of a
    script written for torch_xla, not a conversion site. The same casts in a CUDA script are
    still reported."""
    code = """
    import torch
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.metrics as met

    device = xm.xla_device()
    G = Generator().to(device)
    if config["G_fp16"]:
        G = G.half()
    print(met.metrics_report())
    """
    assert findings(code, "XLA114") == []
    cuda = (
        code.replace("import torch_xla.debug.metrics as met\n", "")
        .replace("print(met.metrics_report())", "print('done')")
        .replace("xm.xla_device()", '"cuda"')
    )
    assert len(findings(cuda, "XLA114")) == 1


def test_float16_offered_beside_bfloat16_by_the_scripts_own_option_is_quiet():
    # held-out 125: `--mixed_precision fp16|bf16` picks the dtype; rewriting the fp16 branch
    # would make the option lie. A float16 with no bfloat16 sibling is still reported.
    code = """\
import torch
import torch_xla
device = torch_xla.device()
mp_dtype = torch.float32
if args.mixed_precision == "fp16":
    mp_dtype = torch.float16
elif args.mixed_precision == "bf16":
    mp_dtype = torch.bfloat16
if args.half:
    weight_dtype = torch.float16
elif args.bf16:
    other_dtype = torch.bfloat16
else:
    weight_dtype = torch.float32
"""
    found = findings(code, "XLA114")
    assert [f.span.start.line for f in found] == [9]
    # Still on CUDA: the fp16 branch is the one its setup takes; reported.
    on_cuda = code.replace("torch_xla.device()", 'torch.device("cuda")')
    assert [f.span.start.line for f in findings(on_cuda, "XLA114")] == [5, 9]
