"""``DataCollatorForLanguageModeling`` pads to the longest sequence of each batch (XLA303).

It has no ``padding`` option: its ``torch_call`` always pads to the batch's longest sequence,
rounded up to ``pad_to_multiple_of`` (dolly's completion-only collator, a subclass, passes 8: up
to max_length/8 shapes, one compile each). The fixed-shape form is ``pad_to_multiple_of`` equal
to the length every sequence is cut to, which this module cannot name for the script (dolly's
``max_length`` is a local read from the model config), so it reports with advice and no fix.

The other fixed-shape route, ``padding="max_length"`` in the tokenizer call, changes the lengths
the script sees: a later ``dataset.filter(lambda r: len(r["input_ids"]) < max_length)`` (dolly
drops truncated rows that way) would then drop every row. When the script filters on a length
like that, the advice names the line and warns against it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.arguments import literal_sources
from ...semantic.model import ScriptModel, keyword, method_name
from ..base import Finding, Severity

LM_COLLATORS = frozenset(
    {
        "transformers.DataCollatorForLanguageModeling",
        "transformers.data.data_collator.DataCollatorForLanguageModeling",
        "transformers.data.DataCollatorForLanguageModeling",
    }
)
# A literal multiple this large is taken as a deliberate length (512 for a 512-token model): a
# finding there would often be wrong. Alignment multiples (8, 16, 32) bound nothing.
SMALL_MULTIPLE = 64
PAD_TO_MULTIPLE_INDEX = 6  # positional index in the dataclass constructor (transformers 4.x/5.x)


def lm_collator_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    classes = _collator_classes(model)
    if not classes:
        return
    length_filter = _length_filter(model)
    for call in model.calls:
        name = _class_of(model, call, classes)
        if name is None:
            continue
        multiple = _multiple(call)
        if multiple is not None and not _small(model, multiple):
            continue
        rounded = (
            f", rounded up to pad_to_multiple_of={model.segment(multiple)}"
            if multiple is not None
            else ""
        )
        message = (
            f"{name} pads each batch to its longest sequence{rounded}: batches get different "
            "shapes and XLA recompiles the graph for each new one"
        )
        manual = (
            "On XLA make every batch one length: pass pad_to_multiple_of=N with N the length "
            "every sequence is truncated to (each batch then pads to exactly N)"
        )
        if length_filter is not None:
            line = length_filter.lineno
            shown = model.line_text(line - 1).strip()[:70]
            manual += (
                f'. Do not pad in the tokenizer instead (padding="max_length"): line {line} '
                f"filters on the unpadded lengths (`{shown}`), and padded rows would all be "
                "dropped"
            )
        else:
            manual += (
                ', or tokenize with padding="max_length", max_length=N, truncation=True '
                "(the collator then finds nothing to pad)"
            )
        yield Finding(code, message, model.span(call), Severity.WARNING, manual=manual + ".")


def _collator_classes(model: ScriptModel) -> dict[str, str]:
    """Qualified names of the LM collator and of the script's classes deriving from it (one
    level of script class over another too), mapped to the name shown."""
    out = {q: "DataCollatorForLanguageModeling" for q in LM_COLLATORS}
    changed = True
    while changed:
        changed = False
        for cls in model.nodes_of(ast.ClassDef):
            assert isinstance(cls, ast.ClassDef)
            if cls.name in out:
                continue
            if any(
                (model.qualname(b) or "") in out or (isinstance(b, ast.Name) and b.id in out)
                for b in cls.bases
            ):
                out[cls.name] = f"{cls.name} (a DataCollatorForLanguageModeling)"
                changed = True
    if not any(model.calls_to(*LM_COLLATORS)) and len(out) == len(LM_COLLATORS):
        return {}
    return out


def _class_of(model: ScriptModel, call: ast.Call, classes: dict[str, str]) -> str | None:
    q = model.call_name(call)
    if q in LM_COLLATORS:
        return classes[q]
    func = call.func
    if isinstance(func, ast.Name) and func.id in classes and func.id not in LM_COLLATORS:
        return classes[func.id]
    return None


def _multiple(call: ast.Call) -> ast.expr | None:
    kw = keyword(call, "pad_to_multiple_of")
    if kw is not None:
        return kw.value
    if len(call.args) > PAD_TO_MULTIPLE_INDEX:
        return call.args[PAD_TO_MULTIPLE_INDEX]
    return None


def _small(model: ScriptModel, multiple: ast.expr) -> bool:
    """Every value the multiple can take is None or a small literal (``8 if fp16 else
    None``); a value out of reach may be the full length: not small."""
    values = literal_sources(model, multiple)
    if not values:
        return False
    return all(
        isinstance(v, ast.Constant)
        and (
            v.value is None
            or (
                isinstance(v.value, int)
                and not isinstance(v.value, bool)
                and v.value < SMALL_MULTIPLE
            )
        )
        for v in values
    )


def _length_filter(model: ScriptModel) -> ast.Call | None:
    """A ``.filter(...)`` whose predicate compares ``len(...)`` of something (dolly's
    ``len(rec["input_ids"]) < max_length``): it reads the unpadded lengths."""
    for call in model.method_calls("filter"):
        if method_name(call) != "filter" or not call.args:
            continue
        pred: ast.AST = call.args[0]
        if isinstance(pred, ast.Name):  # ``ds.filter(keep)`` with ``def keep(rec): ...`` here
            pred = next(
                (f for f in model.nodes_of(ast.FunctionDef) if getattr(f, "name", "") == pred.id),
                pred,
            )
        if any(
            isinstance(n, ast.Compare)
            and any(
                isinstance(side, ast.Call)
                and isinstance(side.func, ast.Name)
                and side.func.id == "len"
                for side in (n.left, *n.comparators)
            )
            for n in ast.walk(pred)
        ):
            return call
    return None
