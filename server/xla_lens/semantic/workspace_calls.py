"""Which function of a workspace module a call of the script runs, found on disk (never
imported or run).

``from utils.torch_utils import smart_DDP; smart_DDP(model)``, ``import utils;
utils.init_distributed_mode(args)`` and ``from utils import prepare_device`` (where
``utils/__init__.py`` says ``from .util import *``) all run a function whose body is in
another file of the project. ``helper_target`` follows the import to that file (where
``workspace.module_file`` looks: beside the script, the top of its package, a few folders
above) and through re-exports in it (``from .util import *``, ``from .x import f``), a few
hops deep. Parsed modules are cached per file and refreshed when its size or mtime changes.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .diskread import read_regular
from .node_helpers import dotted
from .workspace import MAX_BYTES, module_file

if TYPE_CHECKING:
    from .model import ScriptModel

# Re-export hops followed from the imported module (``utils/__init__`` -> ``utils/util``).
MAX_HOPS = 3
_CACHE_LIMIT = 128
# Top-level packages that are libraries, never the workspace (a folder so named is unlikely
# and would be a copy of the library anyway).
NOT_WORKSPACE = frozenset(
    {"torch", "torch_xla", "torchvision", "transformers", "accelerate", "numpy", "lightning"}
)


@dataclass(frozen=True)
class HelperTarget:
    path: Path  # the module file that defines the function
    function: str  # its name in that file
    shown: str  # how the script names it: ``utils.init_distributed_mode``


@dataclass
class ParsedModule:
    path: Path
    source: str
    tree: ast.Module
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    # name -> (module, level, name there) of ``from module import name [as alias]``
    reexports: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    star_imports: list[tuple[str, int]] = field(default_factory=list)
    # name -> module of ``import module`` (``import a.b`` binds ``a``; ``import a.b as c``: c)
    imports: dict[str, str] = field(default_factory=dict)


_modules: dict[tuple[str, int, int], ParsedModule | None] = {}


def parsed_module(path: Path) -> ParsedModule | None:
    """``path`` parsed (None when unreadable or not Python), cached per size and mtime."""
    try:
        st = path.stat()
    except OSError:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key in _modules:
        return _modules[key]
    found: ParsedModule | None = None
    try:
        # Bounded and non-blocking: the workspace decides what the file really is.
        text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
        tree = ast.parse(text, filename=str(path))
        found = _index(path, text, tree)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        found = None
    if len(_modules) >= _CACHE_LIMIT:
        _modules.clear()
    _modules[key] = found
    return found


def _index(path: Path, text: str, tree: ast.Module) -> ParsedModule:
    out = ParsedModule(path, text, tree)
    for stmt in tree.body:  # top level only: what ``module.f`` can name
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            _forget(out, stmt.name)
            table = out.classes if isinstance(stmt, ast.ClassDef) else out.functions
            table[stmt.name] = stmt  # type: ignore[index]
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*":
                    out.star_imports.append((stmt.module or "", stmt.level))
                else:
                    local = alias.asname or alias.name
                    _forget(out, local)
                    out.reexports[local] = (stmt.module or "", stmt.level, alias.name)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".")[0]
                _forget(out, local)
                out.imports[local] = alias.name if alias.asname else local
    return out


def _forget(module: ParsedModule, name: str) -> None:
    """A later top-level binding of ``name`` replaces whatever bound it before."""
    for table in (module.functions, module.classes, module.reexports, module.imports):
        table.pop(name, None)  # type: ignore[attr-defined]


def clear_cache() -> None:
    _modules.clear()


def _is_library(module: str, level: int) -> bool:
    top = module.split(".")[0]
    return level == 0 and (top in NOT_WORKSPACE or top in sys.stdlib_module_names)


def definition(
    path: Path, name: str, hops: int = MAX_HOPS, *, kind: str = "function"
) -> tuple[Path, str] | None:
    """The file and name of the top-level function (``kind="class"``: class) ``name`` of
    module ``path``, following re-exports in it; None when it is not one of the workspace
    (the other kind, a library's, a file that cannot be read)."""
    module = parsed_module(path)
    if module is None:
        return None
    return _definition_in(module, name, hops, kind)


def _definition_in(
    module: ParsedModule, name: str, hops: int, kind: str
) -> tuple[Path, str] | None:
    path = module.path
    if name in (module.classes if kind == "class" else module.functions):
        return path, name
    if hops <= 0:
        return None
    if name in module.reexports:
        source, level, original = module.reexports[name]
        if _is_library(source, level):
            return None
        # ``from .util import f`` in a package's __init__: relative to that file.
        target = module_file(str(path), source, level)
        if target is None:
            return None
        return definition(target, original, hops - 1, kind=kind)
    for source, level in module.star_imports:
        if _is_library(source, level):
            continue
        target = module_file(str(path), source, level)
        if target is not None and target != path:
            found = definition(target, name, hops - 1, kind=kind)
            if found is not None:
                return found
    return None


def class_in_module(module: ParsedModule, expr: ast.expr) -> tuple[Path, str] | None:
    """The workspace class ``expr`` names in ``module`` (a base class, a constructor):
    ``Base`` defined or imported there, ``pkg.mod.Base`` of an ``import pkg.mod``, ``mod.Base``
    of a ``from pkg import mod``."""
    name = dotted(expr)
    if name is None:
        return None
    root, _, rest = name.partition(".")
    if not rest:
        return _definition_in(module, root, MAX_HOPS, "class")
    return _through_module(module, root, rest, "class")


def function_in_module(module: ParsedModule, expr: ast.expr) -> tuple[Path, str] | None:
    """The workspace function ``expr`` names in ``module`` when it is defined in another
    module: ``define_G`` of a ``from models.networks import define_G``, ``networks.define_G``
    of an ``import models.networks as networks`` (the module's own functions excepted)."""
    name = dotted(expr)
    if name is None:
        return None
    root, _, rest = name.partition(".")
    if not rest:
        if root in module.functions:
            return None
        found = _definition_in(module, root, MAX_HOPS, "function")
        return found if found is not None and found[0] != module.path else None
    return _through_module(module, root, rest, "function")


def _through_module(
    module: ParsedModule, root: str, rest: str, kind: str
) -> tuple[Path, str] | None:
    """``root.rest`` where ``root`` names another workspace module in ``module``: an
    ``import pkg.mod`` or a ``from pkg import mod``; the ``kind`` of definition it names."""
    *middle, attr = rest.split(".")
    if root in module.imports:
        full, level = ".".join([module.imports[root], *middle]), 0
    elif root in module.reexports:  # ``from pkg import mod`` then ``mod.Base``
        source, level, original = module.reexports[root]
        full = ".".join(p for p in (source, original, *middle) if p)
    else:
        return None
    if _is_library(full, level):
        return None
    target = module_file(str(module.path), full, level)
    if target is None or target == module.path:
        return None
    return definition(target, attr, kind=kind)


@dataclass(frozen=True)
class LibraryOrigin:
    module: str  # ``ultralytics.utils.torch_utils``
    name: str  # ``autocast``
    via: Path | None  # the workspace module that re-exports it (None: imported straight)


def library_origin(model: ScriptModel, call: ast.Call) -> LibraryOrigin | None:
    """Where ``f(...)`` comes from when it is a library's function, out of reach here:
    imported straight from a module that is not in the workspace, or re-exported by a
    workspace module (``from ultralytics.utils.torch_utils import autocast as
    smart_amp_autocast`` in ``utils/torch_utils.py``). None for the standard library, for a
    function of the workspace, and for an unsaved buffer (what is in reach is unknown)."""
    if not model.path or model.path.startswith("<"):
        return None
    if not isinstance(call.func, ast.Name) or call.func.id in model.functions:
        return None
    bindings = model.memo(("workspace_calls", "bindings"), lambda: _bindings(model))
    bound = bindings.get(call.func.id)
    if bound is None or bound[2] is None:
        return None
    module, level, imported = bound
    return _library_origin(model.path, module, level, imported, None, MAX_HOPS)


def _library_origin(
    importer: str, module: str, level: int, name: str, via: Path | None, hops: int
) -> LibraryOrigin | None:
    if level == 0 and module.split(".")[0] in sys.stdlib_module_names:
        return None
    path = module_file(importer, module, level)
    if path is None:
        return LibraryOrigin(module, name, via) if level == 0 else None
    parsed = parsed_module(path)
    if parsed is None or hops <= 0 or name not in parsed.reexports:
        return None
    source, source_level, original = parsed.reexports[name]
    return _library_origin(str(path), source, source_level, original, path, hops - 1)


def _bindings(model: ScriptModel) -> dict[str, tuple[str, int, str | None]]:
    """local name -> (module, level, imported name) for ``from module import name`` and
    (module, 0, None) for ``import module`` (``import a.b`` binds ``a``)."""
    out: dict[str, tuple[str, int, str | None]] = {}
    for imp in model.import_nodes:  # source order: the last import of a name wins
        if isinstance(imp, ast.ImportFrom):
            for alias in imp.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = (imp.module or "", imp.level, alias.name)
        else:
            for alias in imp.names:
                if alias.asname:
                    out[alias.asname] = (alias.name, 0, None)
                else:
                    top = alias.name.split(".")[0]
                    out[top] = (top, 0, None)
    return out


def helper_target(model: ScriptModel, call: ast.Call) -> HelperTarget | None:
    """The workspace function ``call`` runs (``f(...)`` imported from a workspace module,
    ``mod.f(...)`` / ``pkg.mod.f(...)`` of an imported workspace module), or None."""
    if not model.path or model.path.startswith("<"):
        return None
    name = dotted(call.func)
    if name is None:
        return _module_dict_pick(model, call)
    # Asked for every call: each spelled name is resolved (and looked for on disk) once.
    resolved: dict[str, HelperTarget | None] = model.memo(("workspace_calls", "resolved"), dict)
    if name not in resolved:
        resolved[name] = _resolve(model, call, name)
    return resolved[name]


def _star_imported_function(model: ScriptModel, name: str) -> HelperTarget | None:
    """``from engine import *`` then ``train_and_evaluate(...)`` (l2p-pytorch, held-out 134):
    the workspace module whose star import binds ``name``, the last such import winning. Not
    when the script binds the name itself (a def, a class, an assignment, an import)."""
    if name in model.functions or name in model.imports or model.assigned_from(name):
        return None
    if any(isinstance(n, ast.ClassDef) and n.name == name for n in model.nodes_of(ast.ClassDef)):
        return None
    stars = [
        n
        for n in model.import_nodes
        if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
    ]
    for imp in reversed(stars):
        module, level = imp.module or "", imp.level
        if _is_library(module, level):
            continue
        path = module_file(model.path, module, level)
        if path is None:
            continue
        try:
            if path.resolve() == Path(model.path).resolve():
                continue
        except OSError:
            continue
        found = definition(path, name)
        if found is not None:
            return HelperTarget(found[0], found[1], name)
    return None


def _module_dict_pick(model: ScriptModel, call: ast.Call) -> HelperTarget | None:
    """``models_llama_adapter.__dict__[args.model](args)`` of a workspace module that defines
    one function (LLaMA-Adapter's ``Llama7B_adapter``, held-out 104): whatever the key, that
    function runs. A module of several is anyone's guess (its classes are followed apart)."""
    func = call.func
    if not (
        isinstance(func, ast.Subscript)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "__dict__"
        and (module_name := dotted(func.value.value)) is not None
    ):
        return None
    bindings = model.memo(("workspace_calls", "bindings"), lambda: _bindings(model))
    bound = bindings.get(module_name.split(".")[0])
    if bound is None:
        return None
    module, level, imported = bound
    full = ".".join(p for p in (module, imported or "", *module_name.split(".")[1:]) if p)
    if _is_library(full, level):
        return None
    path = module_file(model.path, full, level)
    parsed = parsed_module(path) if path is not None else None
    if parsed is None or len(parsed.functions) != 1:
        return None
    (function,) = parsed.functions
    return HelperTarget(parsed.path, function, f"{module_name}.__dict__[...]")


def _resolve(model: ScriptModel, call: ast.Call, name: str) -> HelperTarget | None:
    bindings = model.memo(("workspace_calls", "bindings"), lambda: _bindings(model))
    root, _, rest = name.partition(".")
    bound = bindings.get(root)
    if bound is None:
        return None if rest else _star_imported_function(model, root)
    module, level, imported = bound
    if not rest:
        if imported is None or root in model.functions:
            return None
        if _is_library(module, level):
            return None
        path = module_file(model.path, module, level)
        function = imported
    else:
        *middle, function = rest.split(".")
        if imported is None:
            full = ".".join([module, *middle])
        else:  # ``from pkg import mod`` / ``from . import utils``: the name is a module
            full = ".".join(p for p in (module, imported, *middle) if p)
        if _is_library(full, level):
            return None
        path = module_file(model.path, full, level)
    if path is None:
        return None
    try:
        if path.resolve() == Path(model.path).resolve():
            return None
    except OSError:
        return None
    found = definition(path, function)
    if found is None:
        return None
    return HelperTarget(found[0], found[1], name)


def workspace_class(model: ScriptModel, name: str) -> ast.ClassDef | None:
    """The class ``name`` (a plain name the script imports) of a workspace module, following
    re-exports; None for a library's or one out of reach."""
    if not model.path or model.path.startswith("<"):
        return None
    bindings = model.memo(("workspace_calls", "bindings"), lambda: _bindings(model))
    bound = bindings.get(name)
    if bound is None or bound[2] is None or _is_library(bound[0], bound[1]):
        return None
    path = module_file(model.path, bound[0], bound[1])
    found = definition(path, bound[2], kind="class") if path is not None else None
    module = parsed_module(found[0]) if found is not None else None
    return module.classes.get(found[1]) if module is not None and found is not None else None
