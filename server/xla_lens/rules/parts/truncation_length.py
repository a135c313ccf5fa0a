"""The length a script's tokenizer truncates to, as a collator elsewhere can name it.

A collator that pads to the longest example (XLA303) gets a fixed ``max_length``. A guessed
length is wrong both ways: a collator does not truncate, so a batch holding a longer example
raises ("Unable to create tensor ... activate truncation", transformers 5), and a shorter
guess than the data is the common case (alpaca-lora truncates at 256; the old guess was 128).
The tokenizer call's own ``max_length`` (``truncation=True, max_length=cutoff_len``) is the
length no tokenized example exceeds, so it is the collator's natural bound, when the collator
can name the same value: a literal, a module-level name, or a parameter of a function that
encloses both calls.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, keyword


def _truncates(call: ast.Call) -> ast.expr | None:
    truncation = keyword(call, "truncation")
    length = keyword(call, "max_length")
    if truncation is None or length is None:
        return None
    value = truncation.value
    if not (isinstance(value, ast.Constant) and value.value in (True, "longest_first")):
        return None
    return length.value


def _nameable_at(model: ScriptModel, length: ast.expr, where: ast.Call) -> bool:
    if isinstance(length, ast.Constant):
        return isinstance(length.value, int) and not isinstance(length.value, bool)
    if not isinstance(length, ast.Name):
        return False
    name = length.id
    for fn in model.ancestors(where):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            params = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
            if any(p.arg == name for p in params):
                return fn in set(model.ancestors(length))
            if any(
                isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                for n in ast.walk(fn)
            ):
                return False  # a local of the collator's function: maybe another value
    return any(
        isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id == name
        for s in model.tree.body
    )


def truncation_length(
    model: ScriptModel, collator: ast.Call, tokenizer_calls: list[ast.Call]
) -> tuple[str, int] | None:
    """(the length's source text, its tokenizer call's line) when every truncating tokenizer
    call of the script truncates to one value the collator can name; else None."""
    found = {}
    for call in tokenizer_calls:
        length = _truncates(call)
        if length is None:
            continue
        found.setdefault(model.segment(length), (length, call.lineno))
    if len(found) != 1:
        return None
    text, (length, line) = next(iter(found.items()))
    return (text, line) if _nameable_at(model, length, collator) else None
