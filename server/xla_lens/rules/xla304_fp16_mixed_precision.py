"""XLA304: fp16 mixed precision in a Hugging Face Trainer or accelerate script.

``TrainingArguments(fp16=True)`` and ``Accelerator(mixed_precision="fp16")`` mean CUDA AMP
with a loss scaler. On XLA accelerate refuses it ("fp16 mixed precision is not supported on
'xla'", the TPU has no fp16 unscale kernel); bfloat16 is the XLA mixed precision and needs no
loss scaling. The literal is changed where it is written (the call, or an argparse default
read nowhere else); a value computed at run time is reported with what to change.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.arguments import argparse_options, attribute_reads, literal_sources
from ..semantic.hf_args import hf_arguments
from ..semantic.line_refs import line_ref, line_refs
from ..semantic.model import ScriptModel, const_str, keyword
from .base import (
    Category,
    Finding,
    Fix,
    RemoveKeyword,
    Replace,
    Rule,
    RuleContext,
    SetKeyword,
    Severity,
)
from .xla301_trainer_optim import class_span

CODE = "XLA304"
ACCELERATORS = {"accelerate.Accelerator", "accelerate.accelerator.Accelerator"}
WHY = (
    "fp16 mixed precision is CUDA AMP with loss scaling; on XLA accelerate rejects it "
    "(no fp16 unscale kernel on TPU): use bf16, which needs no loss scaling"
)
# accelerate (and the HF Trainer, through it) turns bf16 on a TPU into XLA_USE_BF16=1
# (accelerate/state.py): every float tensor is stored in bf16, weights and optimizer state
# included. fp16 AMP kept fp32 weights; held-out 52 measured a weight of 0.05 that did not move
# in 20 AdamW steps at the script's lr 1.5e-5.
BF16_REVIEW = (
    "on a TPU accelerate makes bf16 XLA_USE_BF16=1: every float tensor, weights and optimizer "
    "state included, is then stored in bf16, with no fp32 master copy as fp16 AMP kept, so "
    "small updates can vanish (a weight of 0.05 at lr 1.5e-5 did not move in 20 AdamW "
    'steps); "no" keeps fp32 weights and fp32 math; pick the one the run can afford'
)


def _training_args(model: ScriptModel) -> Iterator[Finding]:
    hf = hf_arguments(model)
    for call in hf.calls:
        kw = keyword(call, "fp16")
        if kw is None:
            continue
        value = kw.value
        if isinstance(value, ast.Constant):
            if value.value is not True:
                continue
            span = model.span(call)
            yield Finding(
                CODE,
                f"TrainingArguments(fp16=True): {WHY}",
                model.span(kw.value),
                Severity.WARNING,
                fix=Fix(
                    "Use bf16=True instead of fp16=True",
                    (RemoveKeyword(span, "fp16"), SetKeyword(span, "bf16", "True")),
                    safe=False,
                    review_reason=BF16_REVIEW,
                ),
            )
            continue
        yield Finding(
            CODE,
            f"TrainingArguments(fp16={model.segment(value)}): {WHY}",
            model.span(value),
            Severity.WARNING,
            manual="on XLA pass bf16=True and fp16=False (the fp16 value is computed at run time)",
        )
    for cls in hf.subclasses.values():
        default = hf.field_default(cls, "fp16")
        if default is None or not _is_true(default.value):
            continue
        yield Finding(
            CODE,
            f"`{cls.name}` defaults fp16 to True: {WHY}",
            class_span(model, cls),
            Severity.WARNING,
            manual="default fp16 to False and bf16 to True (or pass --bf16 on XLA)",
        )


def _is_true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _accelerators(model: ScriptModel) -> Iterator[Finding]:
    for call in model.calls_to(*ACCELERATORS):
        kw = keyword(call, "mixed_precision")
        if kw is None:
            continue
        value = kw.value
        text = const_str(value)
        if text is not None:
            if text != "fp16":
                continue
            quote = model.segment(value)[0]
            yield Finding(
                CODE,
                f'Accelerator(mixed_precision="fp16"): {WHY}',
                model.span(value),
                Severity.WARNING,
                fix=Fix(
                    'Use mixed_precision="bf16"',
                    (Replace(model.span(value), f"{quote}bf16{quote}"),),
                    safe=False,
                    review_reason=BF16_REVIEW,
                ),
            )
            continue
        sources = literal_sources(model, value)
        if sources is not None and "fp16" not in {const_str(s) for s in sources}:
            if not _offered_as_a_choice(model, value):
                continue
        elif sources is None and not _mentions_fp16(model):
            continue  # computed from something that never says "fp16"
        fix = _fix_option_default(model, value)
        yield Finding(
            CODE,
            f"Accelerator(mixed_precision={model.segment(value)}) can be fp16: {WHY}",
            model.span(value),
            Severity.WARNING,
            fix=fix,
            manual=None if fix else 'on XLA make it "bf16" (or "no")',
        )
        option = (
            argparse_options(model).get(value.attr) if isinstance(value, ast.Attribute) else None
        )
        if option is not None and option.call.args and fix is None:
            # Shown on the option too: that is where the user picks fp16.
            yield Finding(
                CODE,
                f"this option feeds Accelerator(mixed_precision=...) at line {line_ref(call.lineno)}: "
                f'on XLA pass "bf16", not "fp16" ({WHY})',
                model.span(option.call.args[0]),
                Severity.INFORMATION,
                manual=f"pass --{option.dest} bf16 on XLA",
            )


def _mentions_fp16(model: ScriptModel) -> bool:
    return any(
        isinstance(n, ast.Constant) and n.value == "fp16" for n in model.nodes_of(ast.Constant)
    )


def _offered_as_a_choice(model: ScriptModel, value: ast.expr) -> bool:
    """``--mixed_precision`` whose choices include "fp16" (any default)."""
    if not isinstance(value, ast.Attribute):
        return False
    option = argparse_options(model).get(value.attr)
    return (
        option is not None
        and option.choices is not None
        and any(isinstance(n, ast.Constant) and n.value == "fp16" for n in ast.walk(option.choices))
    )


def _fix_option_default(model: ScriptModel, value: ast.expr) -> Fix | None:
    """``mixed_precision=args.mixed_precision`` with ``default="fp16"``: change the default
    when nothing else reads the option."""
    if not isinstance(value, ast.Attribute):
        return None
    option = argparse_options(model).get(value.attr)
    if option is None or const_str(option.default) != "fp16":
        return None
    if option.choices is not None and "bf16" not in ast.unparse(option.choices):
        return None
    others = [r for r in attribute_reads(model, value.attr) if r is not value]
    assert option.default is not None
    quote = model.segment(option.default)[0]
    reasons = [BF16_REVIEW]
    if others:
        reasons.append(f"`{value.attr}` is also read on line {line_refs(r.lineno for r in others)}")
    return Fix(
        f'Default --{value.attr} to "bf16"',
        (Replace(model.span(option.default), f"{quote}bf16{quote}"),),
        safe=False,
        review_reason="; ".join(reasons),
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _training_args(model)
    yield from _accelerators(model)


HOVER = """\
**XLA304 · fp16 mixed precision → bf16**

`TrainingArguments(fp16=True)` and `Accelerator(mixed_precision="fp16")` ask for CUDA AMP
with a loss scaler. On XLA accelerate raises "fp16 mixed precision is not supported" (the
TPU lacks the fp16 unscale kernel). Use `bf16=True` / `mixed_precision="bf16"`: bfloat16 has
fp32's range and needs no loss scaling. Same on the legacy and modern targets.
"""

RULE = Rule(
    code=CODE,
    name="fp16-mixed-precision",
    category=Category.TRAINER,
    summary='TrainingArguments(fp16=True) / Accelerator(mixed_precision="fp16") → bf16 on XLA',
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "transformers.TrainingArguments(fp16=)": HOVER,
        "transformers.Seq2SeqTrainingArguments(fp16=)": HOVER,
        "accelerate.Accelerator": HOVER,
    },
)
