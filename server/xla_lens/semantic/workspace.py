"""Facts about sibling modules of the script, read from disk (never imported or run).

``from engine import train_one_epoch`` puts the training step in another file of the same
folder or package. To classify the loop that calls it, the analysis needs a small summary
of that function: does it run one step per call, or a whole epoch loop, and does it sync?
The same summary says whether the function picks a CUDA device or does CUDA-only setup
(``compute_init()`` calling ``torch.cuda.set_device`` and an NCCL process group), so a
rule can point at the call in the script. Summaries are cached per file and refreshed when
the file's size or mtime changes.

Where the module is looked for: ``from .x import f`` relative to the script's package;
``from x import f`` in the script's folder, at the top of its package, and then in a few
folders above it (a script in ``scripts/`` importing ``from mypkg.common import f`` is run
as ``python -m scripts.train`` from the project root). The climb stops at the project root
(a folder holding ``.git``, ``pyproject.toml``, ``setup.py`` or ``setup.cfg``) and after
``MAX_ASCENT`` folders.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .diskread import read_regular
from .sys_path_additions import added_folders

if TYPE_CHECKING:
    from .model import ScriptModel

# Files larger than this are not read: a summary must stay cheap for the editor.
MAX_BYTES = 2_000_000
_CACHE_LIMIT = 256
# Folders above the script's folder (or its package) searched for an absolute import.
MAX_ASCENT = 3
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
# Local helpers followed from a summarised function (compute_init -> get_dist_info).
_CLOSURE_DEPTH = 3


@dataclass(frozen=True)
class FunctionFacts:
    module: str  # the file it was found in
    name: str
    kind: str  # "step": one training step per call; "epoch": runs a training loop; "other"
    syncs: bool  # marks the step itself (mark_step / torch_xla.sync / optimizer_step(barrier))
    # 1-based line of a "cuda"-vs-other device picker on torch.cuda.is_available() in the
    # function or the helpers it calls (``autodetect_device_type()``); 0 when none.
    cuda_picker_line: int = 0
    # ``(qualified name, 1-based line)`` of every torch.cuda.* call there, in source order
    # (``torch.cuda.is_available`` itself excluded: it is the question, not the setup).
    cuda_calls: tuple[tuple[str, int], ...] = ()
    # 1-based line of an ``init_process_group`` with the NCCL backend; 0 when none.
    nccl_line: int = 0
    # The gradient-reducing wrapper it builds (``DistributedDataParallel``, FSDP) and its
    # 1-based line: a ``wrap(model, opt)`` helper owns the all-reduce; "" / 0 when none.
    reducer: str = ""
    reducer_line: int = 0
    # 1-based line of any ``init_process_group`` there (whatever its backend); 0 when none.
    group_line: int = 0
    # ``args.cuda = not args.no_cuda and torch.cuda.is_available()`` there, as
    # ``(attribute, 1-based line, the assignment with only the user's flags or "")``: an
    # options helper whose
    # returned flag is False on every host without CUDA (held-out 21, a2c-ppo's get_args()).
    availability_attrs: tuple[tuple[str, int, str], ...] = ()


_cache: dict[tuple[str, int, int], dict[str, FunctionFacts]] = {}


def package_root(folder: Path) -> Path:
    """The folder above the outermost package (``__init__.py``) containing ``folder``."""
    root = folder
    while (root / "__init__.py").is_file() and root.parent != root:
        root = root.parent
    return root


# folder -> (its mtime, whether it holds a project marker)
_root_cache: dict[str, tuple[int, bool]] = {}


def _is_project_root(folder: Path) -> bool:
    # Asked for every import looked up, for each folder climbed: one stat of the folder
    # instead of one per marker. Adding or removing a marker changes the folder's mtime,
    # which the cached answer is checked against.
    try:
        mtime = folder.stat().st_mtime_ns
        key = str(folder)
        hit = _root_cache.get(key)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        found = any((folder / marker).exists() for marker in PROJECT_MARKERS)
    except OSError:
        return False
    if len(_root_cache) >= _CACHE_LIMIT:
        _root_cache.clear()
    _root_cache[key] = (mtime, found)
    return found


def search_folders(script_folder: Path) -> list[Path]:
    """Where ``from x import f`` is looked for: the script's folder, the top of its package,
    then up to ``MAX_ASCENT`` folders above, never past the project root."""
    out = [script_folder]
    # A relative folder (``train.py`` checked from inside its package: ``Path(".")``) has no
    # parents to climb: climb its absolute one (held-out 16, pygcn's ``from pygcn.utils``).
    here = script_folder if script_folder.is_absolute() else script_folder.absolute()
    top = package_root(here)
    # Folders between the script and the top of its package too: a repository whose root is
    # itself a package (an ``__init__.py`` there) puts that root on sys.path for
    # ``from FastAutoAugment.networks import get_model`` (held-out 26, fast-autoaugment).
    folder = here
    while folder != top and folder.parent != folder:
        folder = folder.parent
        out.append(folder)
    folder = top
    for _ in range(MAX_ASCENT):
        if _is_project_root(folder) or folder.parent == folder:
            break
        folder = folder.parent
        out.append(folder)
    return out


def _named_ancestor_parents(here: Path, top: str) -> list[Path]:
    """The folder above an ancestor named like the module's top package: GraphSAINT's
    ``graphsaint/pytorch_version/train.py`` imports ``graphsaint.pytorch_version.models``
    and runs as ``python -m graphsaint.pytorch_version.train`` from the repository root, above
    a ``graphsaint/setup.py`` that ends the usual climb (held-out 123)."""
    folder = here if here.is_absolute() else here.absolute()
    out = []
    for _ in range(MAX_ASCENT + 2):
        if folder.name == top and folder.parent != folder:
            out.append(folder.parent)
        if folder.parent == folder:
            break
        folder = folder.parent
    return out


def module_file(script_path: str, module: str, level: int) -> Path | None:
    """The file a ``from module import ...`` in ``script_path`` refers to, if it is in the
    script's folder or package, or in a package of a folder above (``search_folders``).
    Only plain files are considered."""
    if not script_path or script_path.startswith("<"):
        return None
    here = Path(script_path).parent
    parts = [p for p in module.split(".") if p]
    if level > 0:
        ups = [here, *here.parents]
        if level - 1 >= len(ups):
            # A relative path (``train_util.py``) has no parents to climb: climb its absolute one.
            ups = [here.absolute(), *here.absolute().parents]
        bases = [ups[level - 1]] if level - 1 < len(ups) else []
    elif not parts:
        return None
    else:
        # Folders the script puts on sys.path itself (``import _init_paths``): at the front
        # for ``sys.path.insert(0, ...)``, last for ``append``.
        front, back = added_folders(Path(script_path))
        bases = [*front, *search_folders(here), *back, *_named_ancestor_parents(here, parts[0])]
    for base in bases:
        stem = base.joinpath(*parts) if parts else base
        # ``from . import x`` (no module part) names the package itself: only its __init__,
        # and ``Path(".")`` has no name to put a ``.py`` suffix on.
        files = (
            (stem.with_suffix(".py"), stem / "__init__.py") if parts else (stem / "__init__.py",)
        )
        for candidate in files:
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
    functions = dict(steps.module_functions)
    # Methods too, as ``Class.method``: a subclass in the script runs the ones it inherits
    # (held-out 47: spoter2's ``self.backward_pass(loss)`` of a base class in base.py).
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef):
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    functions[f"{cls.name}.{fn.name}"] = fn
    for name, fn in functions.items():
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
        facts[name] = FunctionFacts(
            str(path),
            name,
            kind,
            syncs,
            *_device_facts(model, fn),
            availability_attrs=_availability_attrs(model, fn),
        )
    return facts


def _availability_attrs(model: ScriptModel, fn: ast.AST) -> tuple[tuple[str, int, str], ...]:
    from . import pickers  # pickers needs the model, which imports this module

    found: list[tuple[str, int, str]] = []
    for region in _helper_closure(model, fn):
        for n in model.walk_scope(region):
            if not isinstance(n, ast.Assign) or len(n.targets) != 1:
                continue
            t = n.targets[0]
            if (
                isinstance(t, ast.Attribute)
                and any(w in t.attr.lower() for w in pickers.FLAG_WORDS)
                and pickers.mentions_availability(model, n.value, follow=False)
            ):
                flags = pickers.flag_part(model, n.value)
                kept = (
                    f"{model.segment(t)} = " + " and ".join(model.segment(f) for f in flags)
                    if isinstance(flags, list)
                    else ""
                )
                found.append((t.attr, n.lineno, kept))
    return tuple(found)


def _helper_closure(model: ScriptModel, fn: ast.AST) -> list[ast.AST]:
    """``fn`` and the functions of the same module it calls, ``_CLOSURE_DEPTH`` deep."""
    steps = model.steps
    out = [fn]
    frontier = [fn]
    for _ in range(_CLOSURE_DEPTH):
        found = []
        for region in frontier:
            for n in model.walk_scope(region):
                if isinstance(n, ast.Call):
                    target = steps.callee(n)
                    if target is not None and target not in out and target not in found:
                        found.append(target)
        out.extend(found)
        frontier = found
    return out


def _device_facts(
    model: ScriptModel, fn: ast.AST
) -> tuple[int, tuple[tuple[str, int], ...], int, str, int, int]:
    from . import pickers  # pickers needs the model, which imports this module
    from .frameworks import REDUCING_WRAPPERS

    picker_line = 0
    cuda_calls: list[tuple[str, int]] = []
    nccl_line = 0
    reducer, reducer_line = "", 0
    group_line = 0
    for region in _helper_closure(model, fn):
        for n in model.walk_scope(region):
            if isinstance(n, ast.IfExp):
                found = pickers.picker(model, n)
                if found is not None and found.test_kind == "availability" and not picker_line:
                    picker_line = n.lineno
            elif isinstance(n, ast.If):
                if not picker_line and pickers.if_picker(model, n) is not None:
                    picker_line = n.lineno
            elif isinstance(n, ast.Call):
                q = model.call_name(n)
                if q is None:
                    continue
                if q.startswith("torch.cuda.") and q != "torch.cuda.is_available":
                    cuda_calls.append((q, n.lineno))
                elif q.endswith("init_process_group"):
                    group_line = group_line or n.lineno
                    if _uses_nccl(n) and not nccl_line:
                        nccl_line = n.lineno
                elif q in REDUCING_WRAPPERS and not reducer_line:
                    reducer, reducer_line = q.rpartition(".")[2], n.lineno
    cuda_calls.sort(key=lambda c: c[1])
    return picker_line, tuple(cuda_calls), nccl_line, reducer, reducer_line, group_line


def _uses_nccl(call: ast.Call) -> bool:
    values = [k.value for k in call.keywords if k.arg == "backend"] + call.args[:1]
    return any(
        isinstance(v, ast.Constant) and isinstance(v.value, str) and "nccl" in v.value.lower()
        for v in values
    )


def imported_function_facts(
    script_path: str, module: str, name: str, level: int
) -> FunctionFacts | None:
    path = module_file(script_path, module, level)
    if path is None:
        return None
    return function_facts_at(path, name)


def function_facts_at(path: Path, name: str) -> FunctionFacts | None:
    """Facts about function ``name`` (or method ``Class.name``) of the module at ``path``."""
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
    _root_cache.clear()
