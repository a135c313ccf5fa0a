"""XLA303: tokenizers and collators that pad to the longest sequence (a new shape per batch)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ..semantic.bool_options import BoolSwitch, switch_deciding
from ..semantic.line_refs import line_ref
from ..semantic.model import ScriptModel, dotted, keyword, method_name, receiver
from .base import Category, EditOp, Finding, Fix, Replace, Rule, RuleContext, SetKeyword, Severity
from .parts.collator_fields import field_padding_finding, field_values
from .parts.lm_collator_padding import lm_collator_findings
from .parts.per_example_padding import labels_from_ids, per_example, whole_split
from .parts.sequence_collators import longest_row_findings, sequence_collator_findings
from .parts.sft_padding import sft_padding_findings
from .parts.truncation_length import truncation_length

CODE = "XLA303"
DEFAULT_MAX_LENGTH = 128
# Collators whose ``padding`` defaults to True (pad to longest); value = positional index of
# (padding, max_length) in the dataclass constructor.
COLLATORS = {
    "DataCollatorWithPadding": (1, 2),
    "DataCollatorForTokenClassification": (1, 2),
    "DataCollatorForMultipleChoice": (1, 2),
    "DataCollatorForSeq2Seq": (2, 3),
}
COLLATOR_MODULES = ("transformers", "transformers.data.data_collator")
TOKENIZER_METHODS = {"batch_encode_plus", "encode_plus", "encode", "__call__"}
# Switch names that choose between static and dynamic padding (``--pad_to_max_length``).
PADDING_SWITCHES = ("pad",)


@dataclass(frozen=True)
class _Site:
    call: ast.Call
    # Positional indices of padding / max_length, when the API takes them positionally.
    padding_index: int | None
    max_length_index: int | None
    pads_by_default: bool
    takes_truncation: bool


def _last_identifier(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _tokenizer_names(model: ScriptModel) -> set[str]:
    """Names bound to ``AutoTokenizer.from_pretrained(...)``-like calls (``tok = ...``)."""
    out = set()
    for name, assigns in model.assignments.items():
        for a in assigns:
            if isinstance(a.value, ast.Call):
                func = dotted(a.value.func) or ""
                if "tokenizer" in func.lower():
                    out.add(name)
    return out


def _is_tokenizer(node: ast.AST | None, names: set[str]) -> bool:
    ident = _last_identifier(node) if node is not None else None
    return ident is not None and ("tokenizer" in ident.lower() or ident in names)


def _collator(model: ScriptModel, call: ast.Call) -> str | None:
    q = model.call_name(call) or ""
    module, _, cls = q.rpartition(".")
    return cls if cls in COLLATORS and module in COLLATOR_MODULES else None


def _sites(model: ScriptModel) -> Iterator[_Site]:
    names = _tokenizer_names(model)
    for call in model.calls:
        cls = _collator(model, call)
        if cls is not None:
            pad_i, max_i = COLLATORS[cls]
            yield _Site(call, pad_i, max_i, True, False)
            continue
        method = method_name(call)
        if method == "pad" and _is_tokenizer(receiver(call), names):
            yield _Site(call, 1, 2, True, False)
        elif method in TOKENIZER_METHODS and _is_tokenizer(receiver(call), names):
            yield _Site(call, None, None, False, True)
        elif _is_tokenizer(call.func, names):
            # ``tokenizer(texts, ...)`` / ``self.tokenizer(texts, ...)``.
            yield _Site(call, None, None, False, True)


def _argument(call: ast.Call, index: int | None, name: str) -> ast.expr | None:
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    if index is not None and len(call.args) > index:
        arg = call.args[index]
        return None if isinstance(arg, ast.Starred) else arg
    return None


def _pads_to_longest(value: ast.expr | None, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, ast.Constant):
        return value.value is True or value.value == "longest"
    return isinstance(value, ast.Attribute) and value.attr == "LONGEST"


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _padding_sites(model)
    yield from lm_collator_findings(model, CODE)
    yield from sft_padding_findings(model, CODE)
    yield from sequence_collator_findings(model, CODE)
    yield from longest_row_findings(model, CODE)


def _padding_sites(model: ScriptModel) -> Iterator[Finding]:
    sites = list(_sites(model))
    tokenizers = [site.call for site in sites if site.takes_truncation]
    for site in sites:
        call = site.call
        padding = _argument(call, site.padding_index, "padding")
        values = field_values(model, padding) if padding is not None else None
        if values is not None:
            longest = [v for v in values if _pads_to_longest(v.value, False)]
            if longest:
                yield field_padding_finding(model, call, padding, longest[0], CODE)  # type: ignore[arg-type]
            continue
        if not _pads_to_longest(padding, site.pads_by_default):
            continue
        if padding is None and any(kw.arg is None for kw in call.keywords):
            continue  # ``**kwargs`` may set padding already
        if site.takes_truncation and whole_split(model, call):
            continue  # one length per split: no batch changes shape
        span = model.span(call)
        ops: list[EditOp] = []
        if padding is not None and keyword(call, "padding") is None:
            ops.append(Replace(model.span(padding), '"max_length"'))
        else:
            ops.append(SetKeyword(span, "padding", '"max_length"'))
        max_length = _argument(call, site.max_length_index, "max_length")
        invented = max_length is None or (
            isinstance(max_length, ast.Constant) and max_length.value is None
        )
        bound = (
            truncation_length(model, call, tokenizers)
            if invented and not site.takes_truncation
            else None
        )
        length_text = bound[0] if bound else str(DEFAULT_MAX_LENGTH)
        if invented:
            ops.append(SetKeyword(span, "max_length", length_text))
        if site.takes_truncation and keyword(call, "truncation") is None:
            ops.append(SetKeyword(span, "truncation", "True"))
        title = 'Pad to a fixed length: padding="max_length"'
        if bound:
            title += f", max_length={length_text} (the tokenizer's truncation length)"
        elif invented:
            title += f", max_length={DEFAULT_MAX_LENGTH} (a default: adjust to your data)"
        how = (
            "pads to the longest sequence (its default padding)"
            if padding is None
            else "pads to the longest sequence"
        )
        review = (
            _bound_reason(*bound)
            if bound
            else _review_reason(call, max_length, invented, site.takes_truncation)
        )
        switch = switch_deciding(model, call, PADDING_SWITCHES)
        message, severity = _message(how, switch)
        if site.takes_truncation:
            one = per_example(model, call)
            length = model.segment(max_length) if not invented else str(DEFAULT_MAX_LENGTH)
            labels = labels_from_ids(model, call)
            extra = [
                _labels_reason(model, labels, one is not None) if labels is not None else None,
                # After the labels' reason (which gives the advice), just the why.
                (
                    _per_example_reason(one, length)
                    if labels is None
                    else f"one example per "
                    f'call ({one}): "max_length" pads every example to {length}'
                )
                if one is not None
                else None,
            ]
            review = "; ".join(r for r in (*extra, review) if r) or None
            if one is not None:
                message = _per_example_message(how, one)
            if one is not None and labels is not None:
                # Padding one example pads nothing today; "max_length" would put pad tokens
                # into the labels copied from the ids (held-out 19 r1, alpaca: 8 of 10 trained
                # label positions per row became pad): no fix, the collator is the place.
                yield Finding(
                    CODE,
                    message,
                    model.span(padding if padding is not None else call),
                    Severity.INFORMATION,
                    manual=f"Leave this call as it is ({_labels_reason(model, labels, True)}).",
                )
                continue
        yield Finding(
            CODE,
            message,
            model.span(padding if padding is not None else call),
            severity,
            fix=Fix(title, tuple(ops), safe=review is None, review_reason=review),
        )


def _message(how: str, switch: BoolSwitch | None) -> tuple[str, Severity]:
    """What the finding says, and how loud: a branch that a plain run never takes (the
    ``--pad_to_max_length`` of HF's run_glue defaults to True) is advice, not a warning."""
    recompiles = "every batch gets a new shape and XLA recompiles the graph"
    fixed_length = 'use padding="max_length" with a fixed max_length'
    if switch is None:
        return f"{how}: {recompiles}; {fixed_length}", Severity.WARNING
    state = "on" if switch.runs_when else "off"
    avoid = f"pass `{switch.flag}`" if not switch.runs_when else f"turn `{switch.flag}` off"
    if not switch.declared:
        state = str(switch.runs_when)
        avoid = f"set `{switch.flag}` to {not switch.runs_when}"
    if switch.default is None:
        return (
            f"{how} when `{switch.flag}` is {state}: {recompiles}; on XLA {avoid}, or "
            f"{fixed_length} here",
            Severity.WARNING,
        )
    if switch.default != switch.runs_when:
        keep = "on" if switch.default else "off"
        return (
            f"this branch runs only when `{switch.flag}` is {state} (it defaults to "
            f"{switch.default}), and it {how}: {recompiles}; keep `{switch.flag}` {keep} "
            "when training on XLA",
            Severity.INFORMATION,
        )
    return (
        f"{how}, and this branch runs by default (`{switch.flag}` defaults to "
        f"{switch.default}): {recompiles}; {avoid} to avoid the recompiles, or {fixed_length} "
        "here",
        Severity.WARNING,
    )


COLLATOR_ADVICE = (
    'pad in the collator instead: DataCollatorWithPadding(tokenizer, padding="max_length", '
    "max_length=N), or pad_to_multiple_of=N to bound the number of shapes"
)


def _per_example_message(how: str, why: str) -> str:
    """A call on one example pads nothing; the batches' shapes come from the collator."""
    return (
        f"{how}, but this call tokenizes one example ({why}), so it pads nothing here: each "
        "batch's length comes from the collator that batches the examples, and every new "
        f"length recompiles the XLA graph; {COLLATOR_ADVICE}"
    )


def _per_example_reason(why: str, length: str) -> str:
    return (
        f'one example per call ({why}): "longest" padded nothing, "max_length" pads every '
        f"example to {length}, and code that reads input_ids without the attention mask "
        "(labels, packed examples, lengths) now sees pad tokens; "
        f"{COLLATOR_ADVICE}"
    )


def _labels_reason(model: ScriptModel, labels: ast.AST, one_example: bool) -> str:
    line = getattr(labels, "lineno", 0)
    shown = model.line_text(line - 1).strip()[:60] if line else ""
    before = "where there were none" if one_example else "more of them than before"
    return (
        f"labels are derived from the tokenized ids (line {line_ref(line)}: `{shown}`): padded to "
        f"max_length they include pad tokens that are not -100 ({before}), so the loss "
        "changes; mask them (labels[labels == tokenizer.pad_token_id] = -100) or pad in the "
        "collator (DataCollatorWithPadding(tokenizer, pad_to_multiple_of=...), or a fixed "
        "max_length there)"
    )


def _bound_reason(length: str, line: int) -> str:
    return (
        f"max_length={length} is the length the tokenizer truncates to (line {line_ref(line)}): an "
        "example that grows after tokenization (an appended EOS token) is longer, and the "
        "collator then raises; every batch is padded to it"
    )


def _review_reason(
    call: ast.Call, max_length: ast.expr | None, invented: bool, takes_truncation: bool
) -> str | None:
    """Why padding every batch to ``max_length`` may change the data; None when it cannot:
    a literal length and sequences already truncated to it (only the pad tokens, which the
    attention mask hides, change)."""
    if invented and not takes_truncation:
        return (
            f"max_length={DEFAULT_MAX_LENGTH} is a guess: a collator does not truncate, so a "
            "batch holding a longer example raises ('Unable to create tensor'), and shorter "
            "data is over-padded; set it to the length your examples are truncated to"
        )
    if invented:
        return f"max_length={DEFAULT_MAX_LENGTH} is a guess: it truncates or over-pads your data"
    if not (
        isinstance(max_length, ast.Constant)
        and isinstance(max_length.value, int)
        and not isinstance(max_length.value, bool)
    ):
        return (
            "max_length is computed here (it may be None or differ per run): every batch "
            "would pad to it, or fail where it is None"
        )
    truncation_kw = keyword(call, "truncation")
    truncation = truncation_kw.value if truncation_kw is not None else None
    if not takes_truncation:
        return (
            "this call does not truncate: a batch with a sequence longer than max_length, "
            "which padded to the longest before, now fails"
        )
    # With max_length given and truncation left out, the tokenizer already truncates
    # ("longest_first"): truncation=True says what it does.
    if truncation is not None and not (
        isinstance(truncation, ast.Constant) and truncation.value is True
    ):
        return (
            "this call does not truncate (truncation is not True): a batch with a sequence "
            "longer than max_length, which padded to the longest before, now fails"
        )
    return None


HOVER = """\
**XLA303 · static padding**

XLA compiles one graph per input shape. `padding=True` / `padding="longest"` (and the
default of `DataCollatorWithPadding`, `DataCollatorForSeq2Seq`, `tokenizer.pad`) give every
batch its own sequence length, so the graph is recompiled again and again.

Fix: `tokenizer(texts, padding="max_length", max_length=N, truncation=True)` and
`DataCollatorWithPadding(tokenizer, padding="max_length", max_length=N)`. Choose `N` from
your data (the quick fix writes 128 as a placeholder). Same on the legacy and modern targets.
"""

RULE = Rule(
    code=CODE,
    name="static-padding",
    category=Category.TRAINER,
    summary='Tokenizer/collator padding to the longest sequence → padding="max_length" (static shapes)',
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "transformers.DataCollatorWithPadding": HOVER,
        "transformers.DataCollatorForSeq2Seq": HOVER,
        "transformers.AutoTokenizer": HOVER,
        ".pad": HOVER,
        "padding=": HOVER,
    },
)
