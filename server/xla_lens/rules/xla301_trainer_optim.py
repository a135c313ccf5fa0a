"""XLA301: Hugging Face TrainingArguments without the sync-free XLA AdamW."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.model import ScriptModel, const_str, keyword
from .base import Category, Finding, Fix, Rule, RuleContext, SetKeyword, Severity

CODE = "XLA301"
XLA_OPTIM = "adamw_torch_xla"
TRAINING_ARGS = {
    "transformers.TrainingArguments",
    "transformers.Seq2SeqTrainingArguments",
    "transformers.training_args.TrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
}
# Same algorithm as adamw_torch_xla, so switching keeps the training meaning.
ADAMW_VARIANTS = {
    "adamw_torch",
    "adamw_hf",
    "adamw_torch_fused",
    "adamw_apex_fused",
    "adamw_anyprecision",
}


def training_args_calls(model: ScriptModel) -> Iterator[ast.Call]:
    """``TrainingArguments(...)`` / ``Seq2SeqTrainingArguments(...)`` calls, aliases followed."""
    return model.calls_to(*TRAINING_ARGS)


def has_double_star(call: ast.Call) -> bool:
    # ``**kwargs`` may already carry the keyword: adding it could raise "multiple values".
    return any(kw.arg is None for kw in call.keywords)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in training_args_calls(model):
        kw = keyword(call, "optim")
        code = f'"{XLA_OPTIM}"'
        if kw is None:
            if has_double_star(call):
                continue
            yield Finding(
                CODE,
                f'TrainingArguments uses the default AdamW: on XLA set optim="{XLA_OPTIM}", '
                "the sync-free AdamW that keeps the step on the device",
                model.span(call),
                Severity.INFORMATION,
                fix=Fix(f"Set optim={code}", (SetKeyword(model.span(call), "optim", code),)),
            )
            continue
        current = const_str(kw.value)
        # A computed optim (optim=args.optim) is the user's choice at run time.
        if current is None or current == XLA_OPTIM:
            continue
        same_algorithm = current in ADAMW_VARIANTS
        title = f"Set optim={code}" + ("" if same_algorithm else f" (replaces {current!r})")
        message = (
            f'optim="{current}": on XLA use optim="{XLA_OPTIM}", the sync-free AdamW'
            if same_algorithm
            else f'optim="{current}" is not the XLA AdamW; if AdamW suits this model, '
            f'optim="{XLA_OPTIM}" avoids host syncs in the optimizer step'
        )
        yield Finding(
            CODE,
            message,
            model.span(kw.value),
            Severity.INFORMATION,
            # Swapping a different optimizer changes the training: a reviewed quick fix only.
            fix=Fix(title, (SetKeyword(model.span(call), "optim", code),), safe=same_algorithm),
        )


HOVER = """\
**XLA301 · `TrainingArguments(optim="adamw_torch_xla")`**

On XLA devices the Hugging Face `Trainer` should use the sync-free AdamW:
`TrainingArguments(..., optim="adamw_torch_xla")`. The default `adamw_torch` works but its
step is not written for lazy tensors. Same on both targets (legacy torch_xla 1.13 /
SageMaker Training Compiler, modern torch_xla 2.x). See also XLA302 (`dataloader_num_workers`).
"""

RULE = Rule(
    code=CODE,
    name="trainer-optim",
    category=Category.TRAINER,
    summary='TrainingArguments without optim="adamw_torch_xla" → the sync-free XLA AdamW',
    severity=Severity.INFORMATION,
    check=check,
    has_fix=True,
    hover={
        "transformers.TrainingArguments": HOVER,
        "transformers.Seq2SeqTrainingArguments": HOVER,
        "transformers.TrainingArguments(optim=)": HOVER,
        "transformers.Seq2SeqTrainingArguments(optim=)": HOVER,
    },
)
