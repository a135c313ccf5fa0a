"""XLA303's facts about one tokenizer call whose padding it would fix.

``padding="longest"`` on ONE text pads nothing; ``"max_length"`` pads every example. Code that
then reads the ids without the attention mask sees pad tokens it never saw: labels copied from
the ids count them in the loss (they are not -100), packing concatenates them into the text.
So the fix keeps the meaning only for a call that already padded (a batch of texts) and whose
ids do not become labels unmasked. These helpers find the evidence either way.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, keyword, method_name
from ...semantic.node_helpers import iteration_clauses

# Tokenizer methods that take one text (or one pair) by definition.
SINGLE_TEXT_METHODS = frozenset({"encode", "encode_plus"})
# Methods only a str has (and that return a str), so ``x.strip()`` is one text.
STR_METHODS = frozenset({"format", "join", "strip", "lstrip", "rstrip", "lower", "replace"})


def _text_argument(call: ast.Call) -> ast.expr | None:
    if call.args and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    kw = keyword(call, "text")
    return kw.value if kw is not None else None


def _scope(model: ScriptModel, call: ast.Call) -> ast.AST | None:
    """The innermost function or lambda holding ``call``."""
    for a in model.ancestors(call):
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return a
        if isinstance(a, ast.ClassDef):
            return None
    return None


def _bindings(scope: ast.AST, name: str) -> list[ast.expr]:
    return [
        n.value
        for n in ast.walk(scope)
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    ]


def _one_string(expr: ast.expr, scope: ast.AST | None, depth: int = 0) -> bool:
    """An expression that is one str: a literal, an f-string, a concatenation with one, a
    str method's result, or a local name bound only to such values (or annotated ``str``)."""
    if depth > 4:
        return False
    if isinstance(expr, ast.JoinedStr):
        return True
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add | ast.Mod):
        return _one_string(expr.left, scope, depth + 1) or (
            isinstance(expr.op, ast.Add) and _one_string(expr.right, scope, depth + 1)
        )
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name) and expr.func.id == "str":
            return True
        return isinstance(expr.func, ast.Attribute) and expr.func.attr in STR_METHODS
    if isinstance(expr, ast.Name) and isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        args = scope.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if a.arg == expr.id and a.annotation is not None:
                return isinstance(a.annotation, ast.Name) and a.annotation.id == "str"
        if _iterates_strings(scope, expr.id):
            return True
        values = _bindings(scope, expr.id)
        return bool(values) and all(_one_string(v, scope, depth + 1) for v in values)
    return False


STR_SEQUENCES = frozenset({"Sequence", "List", "list", "Iterable", "Tuple", "tuple", "Collection"})


def _iterates_strings(scope: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """``name`` is the loop variable of a ``for`` or a comprehension over a parameter
    annotated as a sequence of str (``strings: Sequence[str]``; held-out 19, stanford_alpaca's
    ``_tokenize_fn``): each value is one string."""
    typed = {
        a.arg for a in (*scope.args.posonlyargs, *scope.args.args) if _str_sequence(a.annotation)
    }
    if not typed:
        return False
    for node in ast.walk(scope):
        for loop in iteration_clauses(node):
            if (
                isinstance(loop.target, ast.Name)
                and loop.target.id == name
                and isinstance(loop.iter, ast.Name)
                and loop.iter.id in typed
            ):
                return True
    return False


def _str_sequence(annotation: ast.expr | None) -> bool:
    """``Sequence[str]``, ``list[str]``, ``typing.List[str]``, ``tuple[str, ...]``."""
    if not isinstance(annotation, ast.Subscript):
        return False
    base = annotation.value
    base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
    inner = annotation.slice
    if isinstance(inner, ast.Tuple) and inner.elts:
        inner = inner.elts[0]
    return base_name in STR_SEQUENCES and isinstance(inner, ast.Name) and inner.id == "str"


def _map_call(model: ScriptModel, scope: ast.AST) -> ast.Call | None:
    """``ds.map(fn, ...)`` / ``ds.map(function=fn)`` / ``ds.map(lambda ex: ...)`` that maps
    ``scope`` over a dataset."""
    if isinstance(scope, ast.Lambda):
        parent = model.parent(scope)
        if isinstance(parent, ast.keyword):
            parent = model.parent(parent)
        ok = isinstance(parent, ast.Call) and method_name(parent) == "map"
        return parent if ok else None  # type: ignore[return-value]
    name = getattr(scope, "name", None)
    for call in model.method_calls("map"):
        fn = call.args[0] if call.args else None
        kw = keyword(call, "function")
        fn = kw.value if kw is not None else fn
        if isinstance(fn, ast.Name) and fn.id == name:
            return call
    return None


def per_example(model: ScriptModel, call: ast.Call) -> str | None:
    """Why ``call`` may tokenize one example per call (a phrase for the message), or None
    when nothing says so (a batch: its padding already made pad tokens). A loop variable
    (``for texts in chunks``) is no evidence either way: it may be a batch."""
    method = method_name(call)
    if method in SINGLE_TEXT_METHODS:
        return f"{method} takes one text"
    scope = _scope(model, call)
    text = _text_argument(call)
    if text is not None and _one_string(text, scope):
        return "its text is one string"
    if isinstance(scope, ast.FunctionDef) and scope.name == "__getitem__":
        return "it runs in a Dataset's __getitem__"
    mapped = _map_call(model, scope) if scope is not None else None
    if mapped is not None:
        batched = keyword(mapped, "batched")
        if not (
            batched is not None
            and isinstance(batched.value, ast.Constant)
            and batched.value.value is True
        ):
            return f"it is mapped over the dataset at line {mapped.lineno} without batched=True"
    return None


def whole_split(model: ScriptModel, call: ast.Call) -> bool:
    """``call`` tokenizes everything a Dataset holds at once, in its ``__init__``
    (``self.encodings = tokenizer(df["smiles"].tolist(), truncation=True, padding=True)``,
    held-out 179's ChemBERTa fine-tuning): padding to the longest gives one length per split,
    not one per batch, so no batch changes shape."""
    scope = model.enclosing_function(call)
    owner = model.parent(scope) if scope is not None else None
    if not (isinstance(scope, ast.FunctionDef) and scope.name == "__init__"):
        return False
    if not isinstance(owner, ast.ClassDef):
        return False
    return any(
        (model.qualname(b) or ast.unparse(b)).rpartition(".")[2].endswith("Dataset")
        for b in owner.bases
    )


def _minus_100(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.UnaryOp)
        and isinstance(n.op, ast.USub)
        and isinstance(n.operand, ast.Constant)
        and n.operand.value == 100
        for n in ast.walk(node)
    )


def _refers(node: ast.AST, call: ast.Call, names: set[str]) -> bool:
    return any(n is call or (isinstance(n, ast.Name) and n.id in names) for n in ast.walk(node))


def labels_from_ids(model: ScriptModel, call: ast.Call) -> ast.AST | None:
    """The first place in ``call``'s function that makes labels from what the call returns
    (``labels = input_ids.clone()``, ``enc["labels"] = enc["input_ids"]``, ``labels=ids``),
    unless the function sets the pad positions to -100 (a statement with -100 that names the
    pad token or the attention mask; masking a prompt prefix leaves the pads in)."""
    scope = _scope(model, call) or model.tree
    start = model.enclosing_statement(call)
    first_line = start.lineno if start is not None else call.lineno
    stmts = sorted(
        (
            n
            for n in model.walk_scope(scope)
            if isinstance(n, ast.stmt)
            and not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and n.lineno >= first_line
        ),
        key=lambda n: (n.lineno, n.col_offset),
    )
    tracked: set[str] = set()
    found: ast.AST | None = None
    for stmt in stmts:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            if not _refers(stmt.value, call, tracked):
                continue
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    tracked.add(t.id)
                if found is None and "label" in model.segment(t).lower():
                    found = stmt
    if found is None:
        for node in (n for s in stmts for n in ast.walk(s)):
            if isinstance(node, ast.keyword) and node.arg == "labels":
                value = node.value
            elif isinstance(node, ast.Dict):
                value = next(
                    (
                        v
                        for k, v in zip(node.keys, node.values, strict=True)
                        if isinstance(k, ast.Constant) and k.value == "labels"
                    ),
                    None,
                )
            else:
                continue
            if value is not None and _refers(value, call, tracked):
                found = node
                break
    if found is None:
        return None
    for stmt in stmts:
        text = model.segment(stmt)
        if _minus_100(stmt) and ("pad" in text or "attention_mask" in text):
            return None
    return found
