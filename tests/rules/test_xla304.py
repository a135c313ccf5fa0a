from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src


def test_literal_fp16_becomes_bf16_for_review():
    # Held-out 52: on a TPU accelerate turns bf16 into XLA_USE_BF16=1 (weights and optimizer
    # state stored in bf16, no fp32 master copy as fp16 AMP kept): a choice, not a rewrite.
    code = """
    import transformers
    args = transformers.TrainingArguments("out", fp16=True, logging_steps=10)
    """
    (f,) = findings(code, "XLA304")
    assert not f.fix.safe and "XLA_USE_BF16=1" in f.fix.review_reason
    assert fixed(code, "XLA304") == src(code)
    assert fixed(code, "XLA304", unsafe=True) == src(
        """
        import transformers
        args = transformers.TrainingArguments("out", logging_steps=10, bf16=True)
        """
    )


def test_computed_fp16_and_subclass_default_are_reported_without_fix():
    code = """
    from dataclasses import dataclass, field
    import transformers

    @dataclass
    class TrainingArguments(transformers.TrainingArguments):
        fp16: bool = field(default=True)

    a = transformers.TrainingArguments("out", fp16=not args.no_fp16, bf16=args.bf16)
    """
    found = findings(code, "XLA304")
    assert len(found) == 2 and all(f.fix is None and f.manual for f in found)


def test_accelerator_fp16_literal_and_argparse_default():
    code = """
    import argparse
    from accelerate import Accelerator
    p = argparse.ArgumentParser()
    p.add_argument("--mixed_precision", default="fp16", choices=["no", "fp16", "bf16"])
    args = p.parse_args()
    a = Accelerator(mixed_precision=args.mixed_precision)
    b = Accelerator(mixed_precision='fp16')
    c = Accelerator(mixed_precision="bf16")
    """
    found = findings(code, "XLA304")
    assert len(found) == 2 and all(not f.fix.safe for f in found)
    assert all("no fp32 master copy" in f.fix.review_reason for f in found)
    out = fixed(code, "XLA304", unsafe=True)
    assert 'default="bf16", choices=' in out and "mixed_precision='bf16'" in out


def test_no_findings_without_fp16():
    code = """
    import transformers
    from accelerate import Accelerator
    a = transformers.TrainingArguments("out", fp16=False, bf16=True)
    b = Accelerator(mixed_precision=mp)
    """
    assert findings(code, "XLA304") == []
    assert "bf16" in get_rule("XLA304").hover["accelerate.Accelerator"]


def test_fp16_offered_as_a_choice_or_as_a_parameter_default_is_reported():
    code = """
    import argparse
    from accelerate import Accelerator
    p = argparse.ArgumentParser()
    p.add_argument("--mixed_precision", default=None, choices=["no", "fp16", "bf16"])
    args = p.parse_args()
    a = Accelerator(mixed_precision=args.mixed_precision)

    class Trainer:
        def __init__(self, amp=False, mixed_precision_type="fp16"):
            self.accelerator = Accelerator(mixed_precision=mixed_precision_type if amp else "no")
    """
    found = findings(code, "XLA304")
    assert len(found) == 3 and all(f.fix is None for f in found)
    assert "--mixed_precision bf16" in found[0].manual
