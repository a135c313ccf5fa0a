"""XLA301: Hugging Face TrainingArguments without the sync-free XLA AdamW."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from ..semantic.hf_args import (
    LEGACY_REASON,
    TRAINING_ARGS,
    FieldDefault,
    hf_arguments,
    runs_no_trainer,
)
from ..semantic.model import ScriptModel, const_str, keyword
from .base import (
    Category,
    EditOp,
    Finding,
    Fix,
    Pos,
    Replace,
    Rule,
    RuleContext,
    SetKeyword,
    Severity,
    Span,
)

CODE = "XLA301"
XLA_OPTIM = "adamw_torch_xla"
__all__ = [
    "TRAINING_ARGS",
    "class_span",
    "elsewhere",
    "has_double_star",
    "legacy_review",
    "training_args_calls",
]
# Same algorithm as adamw_torch_xla, so switching keeps the training meaning.
ADAMW_VARIANTS = {
    "adamw_torch",
    "adamw_hf",
    "adamw_torch_fused",
    "adamw_apex_fused",
    "adamw_anyprecision",
}


def training_args_calls(model: ScriptModel) -> Iterator[ast.Call]:
    """``TrainingArguments(...)`` calls (transformers' classes and local subclasses)."""
    return iter(hf_arguments(model).calls)


def has_double_star(call: ast.Call) -> bool:
    # ``**kwargs`` may already carry the keyword: adding it could raise "multiple values".
    return any(kw.arg is None for kw in call.keywords)


def legacy_review(model: ScriptModel, call: ast.Call) -> dict[str, Any]:
    """Fix safety for a keyword added to ``call``: for review on trl's PPOConfig."""
    if hf_arguments(model).is_legacy_call(call):
        return {"safe": False, "review_reason": LEGACY_REASON}
    return {}


def _subclass_default(model: ScriptModel, call: ast.Call, name: str) -> bool:
    """A call to a local subclass whose own field sets ``name``: the class owns it."""
    hf = hf_arguments(model)
    cls = hf.subclasses.get(call.func.id) if isinstance(call.func, ast.Name) else None
    return cls is not None and hf.inherited_default(cls, name) is not None


def elsewhere(model: ScriptModel, name: str) -> Iterator[tuple[ast.AST, FieldDefault | None, str]]:
    """Where ``name`` is set when no literal call sets it: (node, the field default if a
    local subclass defines one, how to set it by hand). A parsed class that leaves the
    field alone is reported on the parser: that is where its values come from."""
    hf = hf_arguments(model)
    for cls in hf.subclasses.values():
        default = hf.field_default(cls, name)
        if default is not None:
            yield default.value, default, ""
    constructed = {c.func.id for c in hf.calls if isinstance(c.func, ast.Name)}
    for parser, item in hf.parsed_classes:
        cls = hf.parsed_subclass(item)
        # TrlParser.parse_args_and_config() also reads a --config YAML file.
        config = (
            f" or set `{name}` in the --config YAML file" if hf.reads_config_file(parser) else ""
        )
        workspace = hf.workspace_class(item) if cls is None else None
        if workspace is not None:
            if hf.workspace_default(workspace, name) is None:
                shown = f"{workspace[0].path.parent.name}/{workspace[0].path.name}"
                yield (
                    parser,
                    None,
                    f"TrainingArguments come from the command line here: pass --{name}{config}"
                    f", or add the field `{name}` to `{workspace[0].name}` ({shown})",
                )
        elif cls is None:
            yield parser, None, _from_outside(model, parser, name, config)
        elif cls.name not in constructed and hf.inherited_default(cls, name) is None:
            yield (
                parser,
                None,
                f"add a `{name}` field to `{cls.name}` with the XLA value, or pass "
                f"--{name} on the command line{config}",
            )


def _from_outside(model: ScriptModel, parser: ast.Call, name: str, config: str) -> str:
    """How to set ``name`` when the parser fills transformers' own TrainingArguments: on the
    command line, or in the file ``parse_json_file``/``parse_yaml_file`` reads (held-out 66's
    Firefly: every setting in a JSON file, and argparse rejects --optim)."""
    files, command_line = hf_arguments(model).file_parses(parser)
    if not files:
        return (
            f"TrainingArguments come from the command line here: pass --{name}{config} "
            "(nothing in this file sets it)"
        )
    shown = model.segment(files[0].func)
    arg = files[0].args[0] if files[0].args else (files[0].keywords or [None])[0]
    source = f" ({model.segment(arg)})" if arg is not None else ""
    where = f'set `"{name}"` in the file `{shown}` reads{source}'
    if command_line:
        return f"TrainingArguments come from the command line or a file here: pass --{name}{config}, or {where}"
    return f"TrainingArguments come from a file here: {where} (nothing in this file sets it)"


# transformers 4.54+ (huggingface/transformers#37358) defaults ``optim`` to the fused AdamW
# on torch >= 2.8, which torch_xla 2.9 requires: ``fused=True`` rejects XLA parameters
# ("`fused=True` requires all the params to be floating point Tensors of supported devices",
# measured), so a Trainer left at the default fails at its first optimizer step.
FUSED_DEFAULT = (
    "with transformers 4.54+ on torch 2.8+, as on the torch_xla 2.9 stack, the default optimizer "
    "is adamw_torch_fused, whose fused kernel rejects XLA parameters: RuntimeError at the first "
    "optimizer step"
)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if runs_no_trainer(model, "optimizer"):
        return  # the script steps its own optimizer: the Trainer's ``optim`` is never used
    modern = ctx.target == "modern"
    severity = Severity.WARNING if modern else Severity.INFORMATION
    for call in training_args_calls(model):
        kw = keyword(call, "optim")
        code = f'"{XLA_OPTIM}"'
        if kw is None:
            if _subclass_default(model, call, "optim"):
                continue
            if has_double_star(call):
                if modern:  # ``Seq2SeqTrainingArguments(**config["training_args"])``
                    yield Finding(
                        CODE,
                        f"unless the ** arguments set optim, {FUSED_DEFAULT}",
                        model.span(call.func),
                        Severity.WARNING,
                        manual=f'Set optim="{XLA_OPTIM}" where these arguments come from (the '
                        "config file or dict), or pass it here.",
                    )
                continue
            why = FUSED_DEFAULT if modern else "the Trainer's AdamW"
            yield Finding(
                CODE,
                f'TrainingArguments leaves optim at its default: {why}; on XLA set optim="'
                f'{XLA_OPTIM}", the sync-free AdamW that keeps the step on the device',
                model.span(call.func),
                severity,
                fix=Fix(
                    f"Set optim={code}",
                    (SetKeyword(model.span(call), "optim", code),),
                    **legacy_review(model, call),
                ),
            )
            continue
        yield from _value_finding(model, kw.value, SetKeyword(model.span(call), "optim", code))
    for node, default, manual in elsewhere(model, "optim"):
        if default is not None:
            yield from _value_finding(
                model, default.value, Replace(model.span(default.value), f'"{XLA_OPTIM}"')
            )
            continue
        why = f": {FUSED_DEFAULT}" if modern else ""
        yield Finding(
            CODE,
            f'on XLA the Trainer should use optim="{XLA_OPTIM}", the sync-free AdamW{why}',
            class_span(model, node) if isinstance(node, ast.ClassDef) else model.span(node),
            severity,
            manual=manual.replace("--optim", f"--optim {XLA_OPTIM}").replace(
                '`"optim"`', f'`"optim": "{XLA_OPTIM}"`'
            ),
        )


def class_span(model: ScriptModel, cls: ast.ClassDef) -> Span:
    """The ``class Name`` header line rather than the whole body."""
    line = model.line_text(cls.lineno - 1)
    start = line.find(cls.name)
    col = max(start, 0)
    return Span(Pos(cls.lineno - 1, col), Pos(cls.lineno - 1, col + len(cls.name)))


def _value_finding(model: ScriptModel, value: ast.expr, op: EditOp) -> Iterator[Finding]:
    current = const_str(value)
    # A computed optim (optim=args.optim) is the user's choice at run time; another
    # optimizer (adafactor, lion, sgd...) is a deliberate choice whose step has no host sync
    # to avoid (held-out 19 r7: Trainer's Adafactor is tensor ops only), so only the AdamW
    # spellings, which adamw_torch_xla computes the same, are asked to switch.
    if current is None or current == XLA_OPTIM:
        return
    code = f'"{XLA_OPTIM}"'
    if current in ADAMW_VARIANTS:
        fused = current == "adamw_torch_fused"
        yield Finding(
            CODE,
            f'optim="{current}": on XLA use optim="{XLA_OPTIM}", the sync-free AdamW'
            + (
                " (the fused kernel rejects XLA parameters: RuntimeError at the first step)"
                if fused
                else ""
            ),
            model.span(value),
            Severity.WARNING if fused else Severity.INFORMATION,
            fix=Fix(f"Set optim={code}", (op,)),
        )
    elif _cuda_only(current):
        # bitsandbytes' 8-bit and paged optimizers are CUDA kernels: they do not run on XLA
        # at all (the dev corpus's qlora: optim="paged_adamw_32bit").
        yield Finding(
            CODE,
            f'optim="{current}" is a bitsandbytes optimizer, CUDA kernels that do not run on '
            f'XLA; optim="{XLA_OPTIM}" is the XLA AdamW',
            model.span(value),
            Severity.WARNING,
            fix=Fix(
                f"Set optim={code} (replaces {current!r})",
                (op,),
                safe=False,
                review_reason=f"replaces the {current!r} optimizer (its 8-bit or paged states "
                "become full-precision AdamW states: more memory)",
            ),
        )


def _cuda_only(optim: str) -> bool:
    return "8bit" in optim or optim.startswith("paged_") or "bnb" in optim


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
