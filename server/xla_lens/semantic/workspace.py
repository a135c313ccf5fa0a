"""Facts about sibling modules of the script, read from disk (never imported or run).

``from engine import train_one_epoch`` puts the training step in another file of the same
folder or package. To classify the loop that calls it, the analysis needs a small summary
of that function: does it run one step per call, or a whole epoch loop, and does it sync?
Summaries are cached per file and refreshed when the file's size or mtime changes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .diskread import read_regular

# Files larger than this are not read: a summary must stay cheap for the editor.
MAX_BYTES = 2_000_000
_CACHE_LIMIT = 256


@dataclass(frozen=True)
class FunctionFacts:
    module: str  # the file it was found in
    name: str
    kind: str  # "step": one training step per call; "epoch": runs a training loop; "other"
    syncs: bool  # marks the step itself (mark_step / torch_xla.sync / optimizer_step(barrier))


_cache: dict[tuple[str, int, int], dict[str, FunctionFacts]] = {}


def _package_root(folder: Path) -> Path:
    """The folder above the outermost package (``__init__.py``) containing ``folder``."""
    root = folder
    while (root / "__init__.py").is_file() and root.parent != root:
        root = root.parent
    return root


def module_file(script_path: str, module: str, level: int) -> Path | None:
    """The file a ``from module import ...`` in ``script_path`` refers to, if it is in the
    script's folder or package. Only plain files are considered."""
    if not script_path or script_path.startswith("<"):
        return None
    here = Path(script_path).parent
    parts = [p for p in module.split(".") if p]
    if level > 0:
        ups = [here, *here.parents]
        bases = [ups[level - 1]] if level - 1 < len(ups) else []
    else:
        bases = [here, _package_root(here)]
    for base in bases:
        stem = base.joinpath(*parts) if parts else base
        for candidate in (stem.with_suffix(".py"), stem / "__init__.py"):
            try:
                if candidate.is_file() and candidate.stat().st_size <= MAX_BYTES:
                    return candidate
            except OSError:
                continue
    return None


def _summarise(path: Path, source: str) -> dict[str, FunctionFacts]:
    from .model import SYNC_CALLS, ScriptModel  # the model imports this module

    try:
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    model = ScriptModel(source, tree, "<sibling>")  # "<sibling>": follow no further imports
    steps = model.steps
    facts: dict[str, FunctionFacts] = {}
    for name, fn in steps.module_functions.items():
        if fn in steps.epoch_functions:
            kind = "epoch"
        elif fn in steps.step_functions:
            kind = "step"
        else:
            kind = "other"
        syncs = any(
            isinstance(n, ast.Call) and model.call_name(n) in SYNC_CALLS
            for region in steps.callee_closure([fn])
            for n in model.walk_scope(region)
        )
        facts[name] = FunctionFacts(str(path), name, kind, syncs)
    return facts


def imported_function_facts(
    script_path: str, module: str, name: str, level: int
) -> FunctionFacts | None:
    path = module_file(script_path, module, level)
    if path is None:
        return None
    try:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        summary = _cache.get(key)
        if summary is None:
            # Bounded and non-blocking: the workspace decides what the file really is.
            text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
            summary = _summarise(path, text)
            if len(_cache) >= _CACHE_LIMIT:
                _cache.clear()
            _cache[key] = summary
    except OSError:
        return None
    return summary.get(name)


def clear_cache() -> None:
    _cache.clear()
