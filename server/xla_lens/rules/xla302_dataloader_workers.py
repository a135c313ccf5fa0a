"""XLA302: Hugging Face TrainingArguments that load data in the training process."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.hf_args import hf_arguments, runs_no_trainer
from ..semantic.model import ScriptModel, keyword
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, SetKeyword, Severity
from .xla301_trainer_optim import (
    class_span,
    elsewhere,
    has_double_star,
    legacy_review,
    training_args_calls,
)

CODE = "XLA302"
DEFAULT_WORKERS = 4
BOUND = "at least the number of XLA devices and fewer than the number of CPU cores"


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if runs_no_trainer(model, "loader"):
        return  # the script builds its own DataLoader: the Trainer's workers are never used
    for call in training_args_calls(model):
        kw = keyword(call, "dataloader_num_workers")
        if kw is None:
            if has_double_star(call) or _class_sets_it(model, call):
                continue
            anchor: ast.AST = call.func  # the head line, not the whole multi-line call
            what = "dataloader_num_workers is not set (0: batches load in the training process)"
        elif isinstance(kw.value, ast.Constant) and kw.value.value == 0:
            anchor = kw.value
            what = "dataloader_num_workers=0 loads batches in the training process"
        else:
            continue
        span = model.span(call)
        yield Finding(
            CODE,
            f"{what}: on XLA the input pipeline must outpace the device; use {BOUND}",
            model.span(anchor),
            Severity.INFORMATION,
            fix=Fix(
                f"Set dataloader_num_workers={DEFAULT_WORKERS} (adjust: {BOUND})",
                (SetKeyword(span, "dataloader_num_workers", str(DEFAULT_WORKERS)),),
                **legacy_review(model, call),
            ),
        )

    yield from _elsewhere(model)


def _class_sets_it(model: ScriptModel, call: ast.Call) -> bool:
    hf = hf_arguments(model)
    cls = hf.subclasses.get(call.func.id) if isinstance(call.func, ast.Name) else None
    return cls is not None and hf.inherited_default(cls, "dataloader_num_workers") is not None


def _elsewhere(model: ScriptModel) -> Iterator[Finding]:
    for node, default, manual in elsewhere(model, "dataloader_num_workers"):
        if default is not None:
            value = default.value
            if isinstance(value, ast.Constant) and value.value == 0:
                yield Finding(
                    CODE,
                    f"dataloader_num_workers defaults to 0 here: on XLA use {BOUND}",
                    model.span(value),
                    Severity.INFORMATION,
                    fix=Fix(
                        f"Default dataloader_num_workers to {DEFAULT_WORKERS} (adjust: {BOUND})",
                        (Replace(model.span(value), str(DEFAULT_WORKERS)),),
                    ),
                )
            continue
        yield Finding(
            CODE,
            "dataloader_num_workers is not set (0: batches load in the training process): "
            f"on XLA use {BOUND}",
            class_span(model, node) if isinstance(node, ast.ClassDef) else model.span(node),
            Severity.INFORMATION,
            manual=manual.replace("--dataloader_num_workers", "--dataloader_num_workers N").replace(
                '`"dataloader_num_workers"`', '`"dataloader_num_workers": N`'
            ),
        )


HOVER = """\
**XLA302 · `TrainingArguments(dataloader_num_workers=N)`**

XLA runs the step asynchronously, so a data pipeline in the training process becomes the
bottleneck. Set `dataloader_num_workers` (and `preprocessing_num_workers` in the Hugging Face
example scripts) to **at least the number of devices and fewer than the number of CPU cores**.
The fix writes `4` as a starting point. Same on the legacy (torch_xla 1.13) and modern targets.
"""

RULE = Rule(
    code=CODE,
    name="dataloader-workers",
    category=Category.TRAINER,
    summary="TrainingArguments with dataloader_num_workers unset or 0 → worker processes feed the device",
    severity=Severity.INFORMATION,
    check=check,
    has_fix=True,
    hover={
        "transformers.TrainingArguments": HOVER,
        "transformers.Seq2SeqTrainingArguments": HOVER,
        "transformers.TrainingArguments(dataloader_num_workers=)": HOVER,
        "transformers.Seq2SeqTrainingArguments(dataloader_num_workers=)": HOVER,
    },
)
