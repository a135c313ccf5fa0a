"""XLA405: FlashAttention-2 asked of transformers (``attn_implementation="flash_attention_2"``,
the older ``use_flash_attention_2=True``): it needs the CUDA-only flash-attn package, so
loading the model raises ImportError on an XLA host ("FlashAttention2 has been toggled on, but
it cannot be used ... the package for FlashAttention2 doesn't seem to be installed", measured
with transformers 5.25). ``"sdpa"`` is the attention XLA lowers.

The literal gets a review fix to ``"sdpa"``: the same attention through other kernels, so the
numbers may differ in their last bits on CUDA. A flag chosen at run time (open-instruct's
``use_flash_attention_2=True if args.use_flash_attn else False``, on by default, held-out 39)
gets advice: the option is the user's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, const_str
from ..base import Finding, Fix, Replace, Severity

FLASH = ("flash_attention_2", "flash_attention_3")
MESSAGE = (
    "FlashAttention ({what}) needs the CUDA-only flash-attn package: on an XLA host loading the "
    "model raises ImportError (measured); use attn_implementation='sdpa', which XLA lowers"
)
REVIEW = (
    "sdpa computes the same attention with other kernels: on CUDA the numbers may differ in "
    "their last bits"
)


def flash_attention_flags(model: ScriptModel, code: str) -> Iterator[Finding]:
    if "flash_attention" not in model.source:
        return
    for call in model.calls:
        for kw in call.keywords:
            if kw.arg == "attn_implementation" and const_str(kw.value) in FLASH:
                yield Finding(
                    code,
                    MESSAGE.format(what=const_str(kw.value)),
                    model.span(kw.value),
                    Severity.WARNING,
                    fix=Fix(
                        'Use attn_implementation="sdpa"',
                        (Replace(model.span(kw.value), '"sdpa"'),),
                        safe=False,
                        review_reason=REVIEW,
                    ),
                )
            elif kw.arg == "use_flash_attention_2" and not (
                isinstance(kw.value, ast.Constant) and not kw.value.value
            ):
                yield Finding(
                    code,
                    MESSAGE.format(what="use_flash_attention_2"),
                    model.span(kw.value),
                    Severity.WARNING,
                    manual='On XLA turn it off and pass attn_implementation="sdpa" (the option '
                    "that sets it, if any, must default to off there).",
                )
