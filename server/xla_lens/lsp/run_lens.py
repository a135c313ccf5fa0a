"""Code lenses: "▶ Run on GPU (XLA)" above the script's entry point, and the last result."""

from __future__ import annotations

import ast
import re

from lsprotocol import types

from ..runner import RunSummary
from ..semantic.node_helpers import main_guard
from .core import XlaLensServer
from .positions import split_lines
from .run_messages import STOPPED, plural
from .run_results import DocumentRun, RunStore

RUN_TITLE = "▶ Run on GPU (XLA)"
CANCEL_TITLE = "■ Cancel XLA run"
RUN_COMMAND = "xla-lens.run"
CANCEL_COMMAND = "xla-lens.cancelRun"
PYTHON_SUFFIXES = (".py", ".pyw")

# Used when the text does not parse (mid-edit): the lens should not jump to line 0.
_MAIN_GUARD = re.compile(
    r"""^if\s+(__name__\s*==\s*['"]__main__['"]|['"]__main__['"]\s*==\s*__name__)"""
)
_DEF_MAIN = re.compile(r"^(async\s+)?def\s+main\s*\(")


def entry_line(text: str) -> int:
    """0-based line of ``if __name__ == "__main__":``, else of ``def main``, else 0."""
    try:
        tree = ast.parse(text.removeprefix("\ufeff"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # LSP's lines (positions.split_lines), not str.splitlines: a form feed or U+2028 in
        # a comment above would put the lens lines below the guard.
        lines = split_lines(text.removeprefix("\ufeff"))
        for pattern in (_MAIN_GUARD, _DEF_MAIN):
            hit = next((i for i, line in enumerate(lines) if pattern.match(line)), None)
            if hit is not None:
                return hit
        return 0
    guard = main_guard(tree)
    if guard is not None:
        return guard.lineno - 1
    main = next(
        (
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "main"
        ),
        None,
    )
    # A decorated main: the lens goes above its decorators, where the definition starts.
    if main is not None:
        return min([main.lineno, *(d.lineno for d in main.decorator_list)]) - 1
    return 0


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def result_title(summary: RunSummary) -> str:
    status = summary.status
    if status in ("ok", "step-limit"):
        head = "last run"
    elif status == "failed":
        head = f"last run (failed, exit {summary.returncode})"
    elif status == "signal":
        head = f"last run (killed by {summary.signal})"
    else:  # cancelled, timeout: the exit code is ours (SIGTERM), not the script's
        head = f"last run ({STOPPED.get(status, status)})"
    if status == "refused":
        return f"{head}: {summary.message}"[:160]
    if any(p.kind == "no-xla" for p in summary.problems):
        return f"{head}: never used XLA (plain PyTorch): convert it first"
    return (
        f"{head}: {summary.device or '?'} · {plural(summary.steps, 'step')}"
        f" · {plural(summary.uncached_compiles, 'compile')} · {_seconds(summary.compile_s)} compiling"
    )


def result_tooltip(summary: RunSummary) -> str | None:
    """The whole device reason (the toast has only one sentence) and the compile counts."""
    if summary.status == "refused":
        return summary.message or None
    lines = []
    if summary.device:
        lines.append(f"Device {summary.device}: {summary.device_reason}")
    lines.append(
        f"{plural(summary.uncached_compiles, 'compile')} (graphs XLA built, "
        f"{summary.compile_s:.2f} s) and {summary.cached_compiles} cached "
        f"(graphs found in the cache); {summary.execute_s:.2f} s executing"
    )
    return "\n".join(lines)


def lenses_for(uri: str, text: str, run: DocumentRun | None) -> list[types.CodeLens]:
    line = entry_line(text)
    rng = types.Range(
        start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)
    )
    args = [{"uri": uri}]
    if run is not None and run.running:
        main = types.Command(title=CANCEL_TITLE, command=CANCEL_COMMAND, arguments=args)
    else:
        main = types.Command(title=RUN_TITLE, command=RUN_COMMAND, arguments=args)
    lenses = [types.CodeLens(range=rng, command=main)]
    if run is not None and run.summary is not None:
        # An empty command id renders as plain text in VS Code: the lens is a label.
        last = types.Command(
            title=result_title(run.summary), command="", tooltip=result_tooltip(run.summary)
        )
        lenses.append(types.CodeLens(range=rng, command=last))
    elif run is not None and run.refusal is not None:
        last = types.Command(title=f"last run (refused): {run.refusal}"[:160], command="")
        lenses.append(types.CodeLens(range=rng, command=last))
    return lenses


def register(ls: XlaLensServer, store: RunStore) -> None:
    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @ls.guarded("codeLens", default=[])
    def code_lens(ls: XlaLensServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        if uri not in ls.workspace.text_documents:
            return []
        doc = ls.workspace.get_text_document(uri)
        if doc.language_id != "python" and not uri.split("?")[0].endswith(PYTHON_SUFFIXES):
            return []
        return lenses_for(uri, doc.source, store.get(uri))
