"""XLA204: no ``_mp_fn(index)`` entry point.

The XLA launcher (``xmp.spawn`` / ``torch_xla.launch``, and SageMaker Training Compiler's
distributed launcher for Trainer scripts) starts one process per device and calls
``_mp_fn(index)`` in each; a script without it cannot be launched that way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.model import ScriptModel
from .base import Category, Finding, Fix, Pos, ReplaceStatement, Rule, RuleContext, Severity, Span

CODE = "XLA204"
ENTRY = "_mp_fn"


def _takes_index(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    # xmp.spawn(fn, args=(...)) passes extra arguments after the index, so more is fine.
    a = fn.args
    return bool(a.posonlyargs or a.args or a.vararg)


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If):
        return False
    t = node.test
    if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq)):
        return False
    sides = [t.left, t.comparators[0]]
    has_name = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    has_main = any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    return has_name and has_main


def _calls_main(guard: ast.If) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "main"
        for n in ast.walk(guard)
    )


def _header_span(model: ScriptModel, node: ast.stmt) -> Span:
    """The first line of a statement, so the diagnostic does not paint its whole body."""
    start = model.span(node).start
    return Span(start, Pos(start.line, len(model.line_text(start.line))))


def _newline(model: ScriptModel) -> str:
    first = model.lines[0] if model.lines else "\n"
    return "\r\n" if first.endswith("\r\n") else "\n"


def _insert_before_guard(model: ScriptModel, guard: ast.If) -> ReplaceStatement:
    """``def _mp_fn`` above the guard with PEP 8's two blank lines on both sides.

    InsertBefore cannot carry blank lines above the new function, so the guard is
    rewritten with the function in front; it is reproduced from its full source lines,
    which keeps its text (comments included) byte for byte.
    """
    nl = _newline(model)
    first, last = guard.lineno - 1, (guard.end_lineno or guard.lineno) - 1
    # Indented comment lines after the last statement belong to the guard's block.
    for i in range(last + 1, len(model.lines)):
        text = model.lines[i]
        if text.strip() and not (text[:1].isspace() and text.lstrip().startswith("#")):
            break
        if text.strip():
            last = i
    guard_text = "".join(model.lines[first : last + 1]).rstrip("\r\n")
    code = f"def {ENTRY}(index):{nl}    main(){nl}{nl}{nl}{guard_text}{nl}"
    return ReplaceStatement(model.span(guard), code)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    distributed = model.is_distributed
    if not (distributed or model.uses_trainer):
        return
    # Only local processes need it for distributed Trainer runs; single device works as is.
    severity = Severity.WARNING if distributed else Severity.INFORMATION
    entry = model.functions.get(ENTRY)
    if entry is not None:
        if not _takes_index(entry):
            yield Finding(
                CODE,
                f"{ENTRY} must take the process index: the XLA launcher calls {ENTRY}(index)",
                _header_span(model, entry),
                severity,
                manual=f"declare it as def {ENTRY}(index):",
            )
        return
    guard = next((s for s in model.tree.body if _is_main_guard(s)), None)
    main = model.functions.get("main")
    main_at_top = main is not None and main in model.tree.body
    message = (
        f"no {ENTRY}(index) entry point: the XLA launcher (torch_xla.launch / xmp.spawn) "
        f"calls {ENTRY}(index) once per device"
    )
    if guard is not None and main_at_top and _calls_main(guard):
        yield Finding(
            CODE,
            message,
            _header_span(model, guard),
            severity,
            fix=Fix(f"Add def {ENTRY}(index): main()", (_insert_before_guard(model, guard),)),
        )
        return
    anchor = guard or (main if main_at_top else None)
    span = _header_span(model, anchor) if anchor is not None else Span(Pos(0, 0), Pos(0, 0))
    yield Finding(
        CODE,
        message,
        span,
        severity,
        manual=f"define def {ENTRY}(index): that runs the training (e.g. calls main())",
    )


HOVER_MP_FN = """\
**XLA204 · the `_mp_fn(index)` entry point**

XLA runs one process per device; the launcher calls `_mp_fn(index)` in each.

```python
def _mp_fn(index):
    main()
```

| target | launcher |
|---|---|
| modern (torch_xla ≥ 2.5) | `torch_xla.launch(_mp_fn)` |
| legacy (1.13) | `xmp.spawn(_mp_fn)` (`torch_xla.distributed.xla_multiprocessing`) |

Hugging Face `Trainer` scripts need it only for distributed runs.
"""

RULE = Rule(
    code=CODE,
    name="mp-fn",
    category=Category.DISTRIBUTED,
    summary="Distributed or Trainer script without the _mp_fn(index) entry point → def _mp_fn(index): main()",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch_xla.distributed.xla_multiprocessing.spawn": HOVER_MP_FN,
        "torch_xla.launch": HOVER_MP_FN,
    },
)
