"""Which other modules of the workspace call a function of this file, and whether they wrap
the model in DistributedDataParallel.

``from open_clip_train.legacy_train import train_one_epoch`` in ``legacy_main.py``: the
training step lives in ``legacy_train.py``, while the model is wrapped in DDP by its caller.
Converting ``legacy_train.py`` alone, a rule must know that its optimizer's gradients are
already all-reduced in backward (DDP over the ``xla`` backend), or ``xm.optimizer_step``
would all-reduce them a second time. ``workspace_callers`` looks for the callers in the
file's folder (and, when the folder is a package, the folder above it, where scripts sit):
modules that import the function (``from x import f``, ``import x`` then ``x.f(...)``, ``from
pkg import x``) and resolve that import to this very file (``workspace.module_file``). Each
caller module is classified by ``frameworks.ownership`` (DDP/FSDP/SPMD, accelerate or
Lightning own the all-reduce there). Read from disk, never imported or run; bounded and
cached per file version.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .diskread import read_regular
from .workspace import MAX_BYTES, module_file

if TYPE_CHECKING:
    from .model import ScriptModel

MAX_FILES = 64  # .py files looked at per search
_CACHE_LIMIT = 256
_MENTIONS_LIMIT = 4096
# Folders that hold no caller of the project's own code.
_NOT_SCRIPTS = frozenset(
    {"node_modules", "venv", "env", "site-packages", "build", "dist"}
)  # small entries: one per file version and function asked


@dataclass(frozen=True)
class CallerModule:
    path: Path
    lines: tuple[int, ...]  # 1-based lines of its calls of the function
    reducer: str | None  # what all-reduces the gradients there (``DistributedDataParallel``)
    # torch_xla's launcher starts its processes (``torch_xla.launch`` / ``xmp.spawn`` called,
    # or an ``_mp_fn`` entry for ``xla_spawn.py``-style launchers).
    xla_launched: bool = False
    # A training loop there iterates what a call returns (``loader = get_loader(...)``, then
    # ``for x, y in loader: ... .backward()``).
    trains_on_result: bool = False
    # Which part of the result it trains on: the place in the unpacked tuple (``train_loader,
    # test_loader = get_loader(args)`` then a loop over ``train_loader``: 0), None for all.
    trained_elements: frozenset[int | None] = frozenset()
    # (1-based line of its optimizer build, 1-based line in this file of the move that makes
    # the optimizer stale): it builds an optimizer from a model's parameters, then hands the
    # model to the function or class here, which moves it (SimCLR's run.py, held-out 34).
    stale: tuple[tuple[int, int], ...] = ()
    # 1-based lines of its calls that run in its launcher's parent process (``seed_everything
    # (42)`` at module level before ``xmp.spawn``): a runtime call the function makes there
    # fails the launch (held-out 93).
    parent_lines: tuple[int, ...] = ()


# (path, size, mtime, function, stem) -> whether the file spells both names (only those that
# do are read again and parsed); the summaries of those, by the same key.
_mentions: dict[tuple[str, int, int, str, str], bool] = {}
_summaries: dict[tuple[str, int, int, str, str], CallerModule | None] = {}


def clear_cache() -> None:
    _imports_stem.clear()
    _mentions.clear()
    _summaries.clear()


def _folders(path: Path) -> list[Path]:
    """The file's folder; when it is a package, the folder above it (where scripts sit) and
    that folder's other plain folders (``scripts/`` beside ``utils/``, as in 1d-tokenizer's
    layout: ``scripts/train.py`` runs ``from utils.train_utils import ...``)."""
    here = path.parent
    out = [here]
    if (here / "__init__.py").is_file():
        above = here.parent
        out.append(above)
        try:
            beside = sorted(
                p
                for p in above.iterdir()
                if p != here
                and p.name[:1] not in "._"
                and p.name not in _NOT_SCRIPTS
                and p.is_dir()
            )
        except OSError:
            beside = []
        out.extend(beside)
    elif here.name.isidentifier() and here.parent != here:
        # A namespace package (no ``__init__.py``): ``from utils.data_utils import get_loader``
        # in the folder above still imports it (held-out 20, ViT-pytorch's utils/).
        out.append(here.parent)
    return out


# (path, size, mtime, stem) -> whether the file imports a module of that name.
_imports_stem: dict[tuple[str, int, int, str], bool] = {}


def imported_elsewhere(model: ScriptModel) -> bool:
    """Whether another module where ``workspace_callers`` looks imports this file at all (a
    cheap test before asking for the callers of each of its functions: most files, and every
    generated bench script, have none)."""
    if not model.path or model.path.startswith("<"):
        return False
    return model.memo(("workspace_callers", "imported"), lambda: _imported_elsewhere(model))


def _imported_elsewhere(model: ScriptModel) -> bool:
    try:
        me = Path(model.path).resolve()
        folders = _folders(me)
    except OSError:
        return False
    pattern = re.compile(rf"^\s*(from|import)\s[^\n]*\b{re.escape(me.stem)}\b", re.M)
    seen = 0
    for folder in folders:
        try:
            files = sorted(p for p in folder.iterdir() if p.suffix == ".py")
        except OSError:
            continue
        for path in files:
            if seen >= MAX_FILES:
                return False
            seen += 1
            if path == me:
                continue
            try:
                st = path.stat()
            except OSError:
                continue
            key = (str(path), st.st_size, st.st_mtime_ns, me.stem)
            found = _imports_stem.get(key)
            if found is None:
                try:
                    text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
                except OSError:
                    text = ""
                found = pattern.search(text) is not None
                if len(_imports_stem) >= _MENTIONS_LIMIT:
                    _imports_stem.clear()
                _imports_stem[key] = found
            if found:
                return True
    return False


def workspace_callers(model: ScriptModel, function: str) -> list[CallerModule]:
    """The modules of the workspace (other than this file) that call ``function`` of it."""
    if not model.path or model.path.startswith("<"):
        return []
    return model.memo(("workspace_callers", function), lambda: _search(model, function))


def _search(model: ScriptModel, function: str) -> list[CallerModule]:
    try:
        me = Path(model.path).resolve()
        folders = _folders(me)
    except OSError:
        return []
    out: list[CallerModule] = []
    seen = 0
    for folder in folders:
        try:
            files = sorted(p for p in folder.iterdir() if p.suffix == ".py")
        except OSError:
            continue
        for path in files:
            if seen >= MAX_FILES:
                return out
            seen += 1
            if path == me:
                continue
            found = _caller(path, me, function)
            if found is not None:
                out.append(found)
    return out


def _caller(path: Path, target: Path, function: str) -> CallerModule | None:
    try:
        st = path.stat()
    except OSError:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns, function, str(target))
    if _mentions.get(key) is False:
        return None
    if key in _summaries:
        return _summaries[key]
    try:
        text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
    except OSError:
        text = ""
    # Cheap first: the caller must spell the function's name and the module's.
    mentions = function in text and target.stem in text
    if len(_mentions) >= _MENTIONS_LIMIT:
        _mentions.clear()
    _mentions[key] = mentions
    if not mentions:
        return None
    if len(_summaries) >= _CACHE_LIMIT:
        _summaries.clear()
    _summaries[key] = _summarise(path, text, target, function)
    return _summaries[key]


def _summarise(path: Path, text: str, target: Path, function: str) -> CallerModule | None:
    from .frameworks import ownership  # frameworks imports the model, which imports us
    from .launch import ENTRY, XLA_LAUNCHERS, is_launched
    from .model import ScriptModel

    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    direct: set[str] = set()  # names bound to the function
    modules: set[str] = set()  # names bound to this file as a module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                local = alias.asname or alias.name
                if alias.name == function and (
                    _is(path, node.module or "", node.level, target)
                    or _reexported(path, node.module or "", node.level, target, function)
                ):
                    direct.add(local)
                elif alias.name == target.stem:
                    full = ".".join(p for p in (node.module, alias.name) if p)
                    if _is(path, full, node.level, target):
                        modules.add(local)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[-1] == target.stem and _is(path, alias.name, 0, target):
                    modules.add(alias.asname or alias.name)
    if not direct and not modules:
        return None
    # ``Exp = Exp_Forecast`` then ``exp = Exp(args)`` (OpenLTM's run.py, held-out 107).
    for _ in range(2):
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Name)
                and node.value.id in direct
            ):
                direct.update(t.id for t in node.targets if isinstance(t, ast.Name))
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in direct:
            lines.append(node.lineno)
        elif isinstance(func, ast.Attribute) and func.attr == function:
            if ast.unparse(func.value) in modules:
                lines.append(node.lineno)
    if not lines:
        return None
    caller = ScriptModel(text, tree, "<caller>")
    owner = ownership(caller)
    reducer = owner.framework or owner.reduced_besides_xla_steps
    launched = ENTRY in caller.functions or any(
        caller.call_name(c) in XLA_LAUNCHERS for c in caller.calls
    )
    trained = _trained_elements(caller, set(lines))
    # An optimizer built here (``.parameters(``) or by a helper (TransReID's
    # ``make_optimizer(cfg, model, ...)``, held-out 83): both need the caller's own analysis.
    stale = _stale_builds(path, text, tree, target) if "optim" in text.lower() else ()
    parent = _parent_lines(caller, lines) if is_launched(caller) else ()
    return CallerModule(
        path, tuple(sorted(lines)), reducer, launched, bool(trained), trained, stale, parent
    )


def _parent_lines(caller: ScriptModel, lines: list[int]) -> tuple[int, ...]:
    from .launch import launch_targets, parent_functions, replica_functions, runs_in_parent

    replicas = replica_functions(caller, launch_targets(caller, None))
    parents = parent_functions(caller, None)
    return tuple(sorted(ln for ln in set(lines) if runs_in_parent(caller, ln, replicas, parents)))


def _stale_builds(
    path: Path, text: str, tree: ast.Module, target: Path
) -> tuple[tuple[int, int], ...]:
    """The caller's optimizer builds made stale by a move in ``target`` (its real path lets
    it follow its imports back here; ``target`` is read as saved, or as the editor holds it)."""
    from .accelerate_prepare import stale_optimizers
    from .model import ScriptModel

    caller = ScriptModel(text, tree, str(path))
    out = []
    for build, move in stale_optimizers(caller):
        name, _, line = move.elsewhere.rpartition(":")
        if name == target.name and line.isdigit():
            out.append((build.node.lineno, int(line)))  # type: ignore[attr-defined]
    return tuple(sorted(set(out)))


def _trained_elements(caller: ScriptModel, lines: set[int]) -> frozenset[int | None]:
    """What a training loop of ``caller`` iterates of the function's result on one of
    ``lines``: the element's place where the result is unpacked (``a, b = f(...)``), None
    where the whole result is bound to a name."""
    bound: dict[str, int | None] = {}
    for node in ast.walk(caller.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if node.value.lineno in lines:
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        bound[t.id] = None
                    elif isinstance(t, ast.Tuple | ast.List):
                        for i, e in enumerate(t.elts):
                            if isinstance(e, ast.Name):
                                bound[e.id] = i
    if not bound:
        return frozenset()
    found: set[int | None] = set()
    for loop in caller.training_loops:
        it = _first_argument(getattr(loop.node, "iter", None))  # enumerate(loader), tqdm(loader)
        if not isinstance(it, ast.Name):
            continue
        if it.id not in bound:
            it = _wrapped_by(caller, loop.node, it.id)
        if isinstance(it, ast.Name) and it.id in bound:
            found.add(bound[it.id])
    return frozenset(found)


def _wrapped_by(caller: ScriptModel, loop: ast.AST, name: str) -> ast.AST | None:
    """``epoch_iterator = tqdm(train_loader, ...)`` in the loop's function, then ``for batch
    in enumerate(epoch_iterator):`` (held-out 20, ViT-pytorch): ``train_loader``, when the
    function binds the name once."""
    fn = caller.enclosing_function(loop)
    values = [
        a.value
        for a in caller.assignments.get(name, ())
        if isinstance(a, ast.Assign) and caller.enclosing_function(a) is fn
    ]
    return _first_argument(values[0]) if len(values) == 1 else None


def _first_argument(node: ast.AST | None) -> ast.AST | None:
    """``f(g(x), ...)`` → ``x``: the innermost first argument of nested calls."""
    while isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    return node if not isinstance(node, ast.Call) else None


def _reexported(importer: Path, module: str, level: int, target: Path, function: str) -> bool:
    """``from processor import do_train`` where ``processor/__init__.py`` says ``from
    .processor import do_train`` (TransReID's train.py, held-out 83): the package hands out
    the function of ``target``."""
    found = module_file(str(importer), module, level)
    if found is None or found.name != "__init__.py":
        return False
    try:
        text = read_regular(found, MAX_BYTES).decode("utf-8", errors="replace")
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(
        isinstance(node, ast.ImportFrom)
        and any(a.name == function for a in node.names)
        and _is(found, node.module or "", node.level, target)
        for node in tree.body
    )


def _is(importer: Path, module: str, level: int, target: Path) -> bool:
    found = module_file(str(importer), module, level)
    try:
        return found is not None and found.resolve() == target
    except OSError:
        return False
