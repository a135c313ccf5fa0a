"""XLA120: a CUDA extension compiled when a module is imported
(``torch.utils.cpp_extension.load(name, sources=[..."kernel.cu"])``).

Projects with custom CUDA ops (StyleGAN2's ``op/fused_act.py``, ``op/upfirdn2d.py``) build
them with ``cpp_extension.load`` at the top of the op's module, so importing it compiles the
kernels. On an XLA host there is no CUDA toolkit: ``load`` raises (``CUDA_HOME`` is unset)
before the script's first line of training runs; where it does build, its kernels take CUDA
tensors only, and an XLA tensor handed to them fails. The script has to use a PyTorch
implementation of the op instead (many such ops keep one for the CPU). Reported at the
script's import that runs the module (its own ``load`` call where the script builds one
itself); a build inside a ``try`` that handles the failure is the project's fallback and is
left alone, and so is one under a CUDA availability test. Extensions the project's
``setup.py`` compiles (``CUDAExtension``) are found at the imports that run them
(``parts/setup_extensions.py``). No fix: which implementation replaces the kernel is the
project's choice.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ..semantic.device_intent import hand_written_xla
from ..semantic.model import ScriptModel
from ..semantic.node_helpers import dotted
from ..semantic.workspace_calls import parsed_module
from ..semantic.workspace_imports import import_targets, modules_run_by, top_level_imports
from .base import Category, Finding, Rule, RuleContext, Severity
from .parts.library_autocast import display_path
from .parts.setup_extensions import (
    extension_imports,
    inplace_extension_import,
    project_cuda_extensions,
)

CODE = "XLA120"
LOADERS = frozenset({"load", "load_inline"})
CUDA_KEYWORDS = frozenset({"cuda_sources", "extra_cuda_cflags"})
WHY = (
    "an XLA host has no CUDA toolkit, so building it raises (CUDA_HOME is unset), and its "
    "kernels take CUDA tensors only"
)
SETUP_WHY = (
    "its install builds it with the CUDA toolkit, which an XLA host lacks (there the import "
    "raises), and its kernels take CUDA or CPU tensors, never XLA ones"
)
MANUAL = (
    "Use a PyTorch implementation of the op on XLA (many such ops keep one for the CPU), "
    "or import the extension only where CUDA is available."
)


def _is_loader(name: str | None, cpp_names: set[str]) -> bool:
    if name is None:
        return False
    head, _, last = name.rpartition(".")
    if last not in LOADERS:
        return False
    return name in cpp_names or head.endswith("cpp_extension")


def _loader_names(tree: ast.Module) -> set[str]:
    """Local names bound to cpp_extension's loaders (``from torch.utils.cpp_extension import
    load``, ``... import load as build``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("cpp_extension"):
            names |= {a.asname or a.name for a in node.names if a.name in LOADERS}
    return names


def _builds_cuda(call: ast.Call, tree: ast.Module) -> bool:
    """The call compiles CUDA code: a ``.cu`` source named in it (or, through a variable, in
    the module), ``cuda_sources=``, ``extra_cuda_cflags=`` or ``with_cuda=True``."""
    if any(k.arg in CUDA_KEYWORDS for k in call.keywords):
        return True
    if any(
        k.arg == "with_cuda" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in call.keywords
    ):
        return True
    for scope in (call, tree):
        for n in ast.walk(scope):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                if n.value.endswith((".cu", ".cuh")):
                    return True
    return False


CUDA_TESTS = ("cuda.is_available", "CUDA_HOME", "cuda.device_count", "is_cuda")


def _tests_for_cuda(test: ast.expr) -> bool:
    """``if torch.cuda.is_available():`` and the like: the body runs only where CUDA is."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False
    text = ast.unparse(test)
    return any(marker in text for marker in CUDA_TESTS)


def _handled(stack: list[ast.AST]) -> bool:
    """Inside a ``try`` whose handlers catch the build's failure."""
    for parent in stack:
        if isinstance(parent, ast.Try) and parent.handlers:
            return True
    return False


def cuda_builds(tree: ast.Module, source: str) -> list[ast.Call]:
    """The CUDA extension builds a module runs when imported (top level, also inside a
    top-level ``if``/``with``; not inside functions or classes, nor inside a ``try`` that
    handles their failure)."""
    found: list[ast.Call] = []
    if "cpp_extension" not in source:
        return found  # the usual module: no walk
    cpp_names = _loader_names(tree)

    def visit(stmt: ast.stmt, stack: list[ast.AST]) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return
        if isinstance(stmt, ast.If) and _tests_for_cuda(stmt.test):
            for inner in stmt.orelse:  # the branch without CUDA still runs on XLA
                visit(inner, [*stack, stmt])
            return
        if isinstance(stmt, ast.If | ast.With | ast.Try | ast.TryStar):
            for field in ("body", "orelse", "finalbody"):
                for inner in getattr(stmt, field, []):
                    visit(inner, [*stack, stmt])
            return
        for n in ast.walk(stmt):
            if (
                isinstance(n, ast.Call)
                and _is_loader(dotted(n.func), cpp_names)
                and not _handled(stack)
                and _builds_cuda(n, tree)
            ):
                found.append(n)

    for stmt in tree.body:
        visit(stmt, [])
    return found


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if hand_written_xla(model):
        return
    for call in cuda_builds(model.tree, model.source):
        yield Finding(
            CODE,
            f"this builds a CUDA extension when the script starts: {WHY}",
            model.span(call),
            Severity.ERROR,
            manual=MANUAL,
        )
    if not model.path or model.path.startswith("<"):
        return
    script = Path(model.path)
    said: set[Path] = set()
    project = project_cuda_extensions(script)
    extensions_said: set[str] = set()
    for node in model.import_nodes:
        if project is not None:
            found = _extension_import(model, script, node, *project, extensions_said)
            if found is not None:
                yield found
                continue
        inplace = _inplace_import(model, script, node, extensions_said)
        if inplace is not None:
            yield inplace
            continue
        building: list[tuple[Path, ast.Call]] = []
        for path in modules_run_by(script, node):
            parsed = parsed_module(path) if path not in said else None
            builds = cuda_builds(parsed.tree, parsed.source) if parsed is not None else []
            if builds:
                said.add(path)
                building.append((path, builds[0]))
        if not building:
            continue
        names = [display_path(model.path, path) for path, _ in building]
        where = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        lines = "; ".join(
            f"{name} line {call.lineno}: {ast.unparse(call.func)}(...)"
            for name, (_, call) in zip(names, building, strict=True)
        )
        verb = "builds a CUDA extension" if len(names) == 1 else "build CUDA extensions"
        yield Finding(
            CODE,
            f"this import runs {where}, which {verb} when imported ({lines}): {WHY}",
            model.span(node),
            Severity.ERROR,
            manual=MANUAL,
        )


def _extension_import(
    model: ScriptModel,
    script: Path,
    node: ast.Import | ast.ImportFrom,
    root: Path,
    extensions: dict[str, int],
    said: set[str],
) -> Finding | None:
    """The script's import runs imports of CUDA extensions the project's setup.py builds
    (itself, or in workspace modules it runs); each extension is named once per script."""
    if any(isinstance(a, ast.Try | ast.TryStar) for a in model.ancestors(node)):
        return None  # the script's own fallback
    found = extension_imports(root, extensions, script, ast.Module(body=[node], type_ignores=[]))
    ran = modules_run_by(script, node)
    # One import further than the modules followed for builds: the op's wrapper usually
    # sits in the ops package's __init__ (model → ops/__init__ → voxel_module → voxel_op).
    deeper = [
        p
        for path in ran
        if (parsed := parsed_module(path)) is not None
        for inner in top_level_imports(parsed.tree)
        for p in import_targets(path, inner)
        if p not in ran
    ]
    for path in dict.fromkeys([*ran, *deeper]):
        parsed = parsed_module(path)
        if parsed is not None:
            found += extension_imports(root, extensions, path, parsed.tree)
    hits: dict[str, object] = {}
    for hit in found:
        if hit.module not in said:
            hits.setdefault(hit.module, hit)
    if not hits:
        return None
    said.update(hits)
    shown = []
    for hit in list(hits.values())[:3]:
        where = (
            ""
            if hit.importer == script  # type: ignore[attr-defined]
            else f" ({display_path(model.path, hit.importer)} line {hit.line})"  # type: ignore[attr-defined]
        )
        shown.append(f"{hit.module}{where}")  # type: ignore[attr-defined]
    more = f" and {len(hits) - 3} more" if len(hits) > 3 else ""
    first = next(iter(hits.values()))
    setup = display_path(model.path, root / "setup.py")
    kind = "a CUDA extension" if len(hits) == 1 else "CUDA extensions"
    return Finding(
        CODE,
        f"this import runs imports of {', '.join(shown)}{more}: {kind} the project compiles "
        f"({setup} line {first.setup_line}: CUDAExtension): {SETUP_WHY}",  # type: ignore[attr-defined]
        model.span(node),
        Severity.ERROR,
        manual=MANUAL,
    )


def _inplace_import(
    model: ScriptModel, script: Path, node: ast.Import | ast.ImportFrom, said: set[str]
) -> Finding | None:
    """An op package's own setup.py builds the extension the import reaches (deep)."""
    if any(isinstance(a, ast.Try | ast.TryStar) for a in model.ancestors(node)):
        return None
    found = inplace_extension_import(script, node)
    if found is None or found.hit.module in said:
        return None
    said.add(found.hit.module)
    hit = found.hit
    return Finding(
        CODE,
        f"this import runs, through workspace imports, {display_path(model.path, hit.importer)} "
        f"line {hit.line}: an import of {hit.module}, a CUDA extension its package compiles "
        f"({display_path(model.path, found.setup)} line {hit.setup_line}: CUDAExtension): "
        f"{SETUP_WHY}",
        model.span(node),
        Severity.ERROR,
        manual=MANUAL,
    )


HOVER = """\
**XLA120 · CUDA extension built at import**

`torch.utils.cpp_extension.load(...)` with `.cu` sources compiles CUDA kernels when its module
is imported. An XLA host has no CUDA toolkit (the build raises), and the kernels take CUDA
tensors only. Use a PyTorch implementation of the op on XLA.
"""

RULE = Rule(
    code=CODE,
    name="cuda-extension",
    category=Category.CONVERSION,
    summary="a CUDA extension compiled at import (cpp_extension.load of .cu sources) → use a "
    "PyTorch implementation of the op on XLA",
    severity=Severity.ERROR,
    check=check,
    has_fix=False,
    hover={},
)
