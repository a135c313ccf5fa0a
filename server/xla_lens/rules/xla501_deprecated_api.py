"""XLA501: torch_xla API that the chosen target deprecates, removed, or does not have yet."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..semantic import xla_api
from ..semantic.model import Emitter, ScriptModel, const_str
from .base import (
    Category,
    Finding,
    Fix,
    RemoveStatement,
    Replace,
    Rule,
    RuleContext,
    Severity,
    Target,
)
from .parts.gpu_era_env import gpu_era_env_findings
from .parts.moved_modules import moved_module_imports
from .parts.removed_imports import legacy_package_imports, removed_name_imports
from .parts.removed_modules import removed_module_imports
from .parts.sibling_removed_apis import sibling_removed_apis
from .parts.unknown_xm import unknown_xm_attributes
from .parts.version_fallbacks import version_fallback
from .parts.version_guards import in_version_guard
from .xla502_spawn_nprocs import nprocs_raises

CODE = "XLA501"
XM = "torch_xla.core.xla_model"
XMP_SPAWN = "torch_xla.distributed.xla_multiprocessing.spawn"
LEGACY = "torch_xla 1.13 (the legacy target)"
RUNTIME = "torch_xla.runtime"
Emit = Callable[[ScriptModel, Emitter, ast.Call], "str | None"]


@dataclass(frozen=True)
class _Mapping:
    replacement: str  # for messages
    severity: Severity
    status: str
    emit: Emit  # returns None when there is no safe rewrite
    deprecated: bool = False
    applies: Callable[[ast.Call], bool] = lambda call: True
    # Why the rewrite waits for review, where the new call does not do what the old one did
    # in every setting.
    review: str = ""


def _args(
    model: ScriptModel,
    call: ast.Call,
    keep: set[str] | None = None,
    rename: dict[str, str] | None = None,
) -> str | None:
    """The call's argument text, or None when an argument cannot be carried over."""
    rename = rename or {}
    parts = []
    for a in call.args:
        parts.append(
            model.segment(a) if not isinstance(a, ast.Starred) else "*" + model.segment(a.value)
        )
    for kw in call.keywords:
        if kw.arg is None:
            parts.append("**" + model.segment(kw.value))
        elif keep is not None and kw.arg not in keep:
            return None
        else:
            parts.append(f"{rename.get(kw.arg, kw.arg)}={model.segment(kw.value)}")
    return ", ".join(parts)


def _with_args(code: str, args: str | None) -> str | None:
    # xla_api emits argument-less calls "x.y()"; the original arguments go inside.
    if args is None:
        return None
    return code[:-1] + args + ")" if args else code


def _positional(call: ast.Call, limit: int) -> bool:
    return len(call.args) <= limit and not any(isinstance(a, ast.Starred) for a in call.args)


def _device(target: Target) -> Emit:
    def emit(model: ScriptModel, e: Emitter, call: ast.Call) -> str | None:
        if not _positional(call, 1):
            return None
        keep = {"n"} if target == "modern" else {"index"}
        rename = {"n": "index"} if target == "modern" else {"index": "n"}
        return _with_args(xla_api.device(e, target), _args(model, call, keep, rename))

    return emit


def _sync(target: Target) -> Emit:
    def emit(model: ScriptModel, e: Emitter, call: ast.Call) -> str | None:
        return _with_args(xla_api.sync(e, target), _args(model, call, {"wait", "reset_scope"}))

    return emit


def _no_args(
    fn: Callable[[Emitter, Target], str], target: Target, allow_args: bool = False
) -> Emit:
    def emit(model: ScriptModel, e: Emitter, call: ast.Call) -> str | None:
        if (call.args or call.keywords) and not allow_args:
            return None
        return fn(e, target)

    return emit


AMP_SCALER_OPTIONS = frozenset(
    {"init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled"}
)


def _grad_scaler(target: Target) -> Emit:
    def emit(model: ScriptModel, e: Emitter, call: ast.Call) -> str | None:
        if target == "legacy":
            first = const_str(call.args[0]) if call.args else None
            if first != "xla":
                return None
            rest = ast.Call(call.func, call.args[1:], call.keywords)
            return xla_api.grad_scaler(e, target, _args(model, rest) or "")
        # torch.amp.GradScaler takes none of torch_xla's own options: ``use_zero_grad=True``
        # carried over raised TypeError (held-out 181, GPT-SoVITS-TPU): no rewrite then.
        args = _args(model, call, keep=AMP_SCALER_OPTIONS)
        return None if args is None else xla_api.grad_scaler(e, target, args)

    return emit


def _launch(target: Target) -> Emit:
    def emit(model: ScriptModel, e: Emitter, call: ast.Call) -> str | None:
        if not call.args or not _positional(call, 2):
            return None
        parts = [model.segment(a) for a in call.args]
        for kw in call.keywords:
            value = model.segment(kw.value)
            if kw.arg in {"fn", "args", "start_method"}:
                parts.append(f"{kw.arg}={value}")
            # The spawn/launch difference: nprocs=1 is launch's single-process debug mode.
            elif target == "modern" and kw.arg == "nprocs" and value in {"None", "1"}:
                if value == "1":
                    parts.append("debug_single_process=True")
            elif (
                target == "legacy"
                and kw.arg == "debug_single_process"
                and value in {"True", "False"}
            ):
                if value == "True":
                    parts.append("nprocs=1")
            else:
                return None
        return xla_api.launch(e, target, ", ".join(parts))

    return emit


def _legacy_seed(model: ScriptModel, e: Emitter, call: ast.Call) -> str | None:
    if len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
        return None
    return xla_api.manual_seed(e, "legacy", model.segment(call.args[0]))


_AUTOCAST_KEYWORDS = frozenset({"enabled", "dtype", "cache_enabled"})


def _deviceless_autocast(call: ast.Call) -> bool:
    """``torch_xla.amp.autocast(enabled=...)``: torch_xla 1.13's signature (no device)."""
    return not call.args and all(kw.arg in _AUTOCAST_KEYWORDS for kw in call.keywords)


def _xla_autocast(model: ScriptModel, e: Emitter, call: ast.Call) -> str | None:
    # 1.13's torch_xla.amp.autocast on TPU cast to bf16, which is torch.autocast("xla")'s
    # dtype; torch_xla 2.9's own class given a device ignores autocast on the CPU runtime and
    # then fails on entry ('autocast' object has no attribute 'device', measured).
    torch = e.torch
    given = {kw.arg: model.segment(kw.value) for kw in call.keywords}
    parts = ['"xla"', f"dtype={given.pop('dtype', f'{torch}.bfloat16')}"]
    parts += [f"{k}={v}" for k, v in given.items()]
    return f"{torch}.autocast({', '.join(parts)})"


def _is_xla_scaler(call: ast.Call) -> bool:
    # Only the XLA scaler is ours; torch.amp.GradScaler("cuda") belongs to the AMP rules.
    return bool(call.args) and const_str(call.args[0]) == "xla"


def _removed(old: str, new: str) -> str:
    return f"raises AttributeError in torch_xla 2.9 ({old} was removed): use {new}"


MODERN: dict[str, _Mapping] = {
    f"{XM}.xla_device": _Mapping(
        "torch_xla.device()",
        Severity.WARNING,
        "is deprecated (DeprecationWarning in torch_xla 2.9)",
        _device("modern"),
        deprecated=True,
    ),
    f"{XM}.mark_step": _Mapping(
        "torch_xla.sync()",
        Severity.WARNING,
        "is deprecated (DeprecationWarning in torch_xla 2.9)",
        _sync("modern"),
        deprecated=True,
    ),
    f"{XM}.xrt_world_size": _Mapping(
        "xr.world_size()",
        Severity.ERROR,
        _removed("xm.xrt_world_size", "xr.world_size()"),
        _no_args(xla_api.world_size, "modern"),
    ),
    f"{XM}.get_ordinal": _Mapping(
        "xr.global_ordinal()",
        Severity.ERROR,
        _removed("xm.get_ordinal", "xr.global_ordinal()"),
        # ``defval`` only mattered before the runtime knew its ordinal: safe to drop.
        _no_args(xla_api.global_ordinal, "modern", allow_args=True),
    ),
    "torch_xla.amp.GradScaler": _Mapping(
        'torch.amp.GradScaler("xla")',
        Severity.ERROR,
        _removed("torch_xla.amp.GradScaler", 'torch.amp.GradScaler("xla")'),
        _grad_scaler("modern"),
    ),
    XMP_SPAWN: _Mapping(
        "torch_xla.launch(fn)",
        Severity.INFORMATION,
        "still works; torch_xla.launch is the current launcher",
        _launch("modern"),
        # With a process count other than 1/None it does not work on 2.x: XLA502 says so.
        applies=lambda call: not nprocs_raises(call),
        # torch_xla 2.9's launch(): ``if dist.is_torchelastic_launched(): fn(LOCAL_RANK,
        # *args)`` else ``xmp.spawn``; and ``raise NotImplementedError`` under SPMD. A script
        # that works with xmp.spawn today may run under either (held-out 45: a Kaggle TPU
        # script calls xmp.spawn because launch() took the torchrun branch there).
        review="torch_xla.launch is not xmp.spawn everywhere: when the environment says "
        "torchrun started the process (TORCHELASTIC_RUN_ID) it calls the function once in "
        "this process instead of spawning one process per device, and under SPMD it raises "
        "NotImplementedError; xmp.spawn still works in torch_xla 2.9",
    ),
}
MODERN["torch_xla.amp.grad_scaler.GradScaler"] = MODERN["torch_xla.amp.GradScaler"]
# MLPerf's UNet3D XLA trainer (held-out 70): `with torch_xla.amp.autocast(enabled=amp):` on
# every step, --amp or not.
MODERN["torch_xla.amp.autocast"] = _Mapping(
    'torch.autocast("xla", dtype=torch.bfloat16)',
    Severity.ERROR,
    "raises TypeError in torch_xla 2.9 (torch_xla.amp.autocast takes the device first now)",
    _xla_autocast,
    applies=_deviceless_autocast,
)
# xm names the mapping above speaks for (removed ones too): not said twice.
MAPPED_XM = frozenset(
    q.rpartition(".")[2] for q in MODERN if q.startswith("torch_xla.core.xla_model.")
)

LEGACY_MAP: dict[str, _Mapping] = {
    "torch_xla.device": _Mapping(
        "xm.xla_device()", Severity.ERROR, f"does not exist in {LEGACY}", _device("legacy")
    ),
    "torch_xla.sync": _Mapping(
        "xm.mark_step()", Severity.ERROR, f"does not exist in {LEGACY}", _sync("legacy")
    ),
    "torch_xla.runtime.world_size": _Mapping(
        "xm.xrt_world_size()",
        Severity.ERROR,
        f"does not exist in {LEGACY}",
        _no_args(xla_api.world_size, "legacy"),
    ),
    "torch_xla.runtime.global_ordinal": _Mapping(
        "xm.get_ordinal()",
        Severity.ERROR,
        f"does not exist in {LEGACY}",
        _no_args(xla_api.global_ordinal, "legacy"),
    ),
    "torch_xla.runtime.local_ordinal": _Mapping(
        "xm.get_local_ordinal()",
        Severity.ERROR,
        f"does not exist in {LEGACY}",
        _no_args(xla_api.local_ordinal, "legacy"),
    ),
    "torch_xla.launch": _Mapping(
        "xmp.spawn(fn)", Severity.ERROR, f"does not exist in {LEGACY}", _launch("legacy")
    ),
    "torch_xla.manual_seed": _Mapping(
        "xm.set_rng_state(seed)",
        Severity.ERROR,
        f"does not exist in {LEGACY}",
        _legacy_seed,
    ),
    "torch.amp.GradScaler": _Mapping(
        "torch_xla.amp.GradScaler()",
        Severity.ERROR,
        f'("xla") does not exist in the torch of {LEGACY}',
        _grad_scaler("legacy"),
        applies=_is_xla_scaler,
    ),
}
LEGACY_MAP["torch.GradScaler"] = LEGACY_MAP["torch.amp.GradScaler"]


def _api_findings(model: ScriptModel, table: dict[str, _Mapping]) -> Iterator[Finding]:
    for call in model.calls:
        q = model.call_name(call)
        mapping = table.get(q) if q is not None else None
        if mapping is None or not mapping.applies(call):
            continue
        if version_fallback(model, call):
            continue
        e = Emitter(model)
        code = mapping.emit(model, e, call)
        short = model.segment(call.func)
        message = f"{short}() {mapping.status}"
        if mapping.replacement not in message:
            message += f"; use {mapping.replacement}"
        fix = None
        manual = None
        if code is not None:
            fix = Fix(
                f"Use {code}",
                (Replace(model.span(call), code), *e.imports),
                safe=not mapping.review,
                review_reason=mapping.review,
            )
        else:
            manual = f"Rewrite the call as {mapping.replacement}; its arguments need a manual look."
        yield Finding(
            CODE,
            message,
            model.span(call),
            mapping.severity,
            fix=fix,
            manual=manual,
            deprecated=mapping.deprecated,
        )


def _runtime_imports(model: ScriptModel) -> Iterator[tuple[ast.stmt, str]]:
    """(import statement, bound name) for single-name imports of ``torch_xla.runtime``."""
    for imp in model.import_nodes:
        if len(imp.names) != 1:
            continue
        alias = imp.names[0]
        if isinstance(imp, ast.Import):
            if alias.asname and alias.name.startswith(RUNTIME):
                yield imp, alias.asname
        elif imp.level == 0 and alias.name != "*":
            full = f"{imp.module}.{alias.name}"
            if full == RUNTIME or (imp.module or "").startswith(RUNTIME + "."):
                yield imp, alias.asname or alias.name


def _runtime_import_findings(model: ScriptModel) -> Iterator[Finding]:
    # The module itself is missing in 1.13: importing it fails even once every call is
    # rewritten, so an import left unused by the fixes goes too.
    for imp, bound in _runtime_imports(model):
        uses = [n for n in model.name_nodes(bound) if isinstance(n.ctx, ast.Load)]
        message = f"torch_xla.runtime does not exist in {LEGACY}: this import fails there"
        if not uses:
            fix = Fix(
                "Remove the unused torch_xla.runtime import", (RemoveStatement(model.span(imp)),)
            )
            yield Finding(CODE, message, model.span(imp), Severity.ERROR, fix=fix)
        elif not all(_is_mapped_use(model, n) for n in uses):
            yield Finding(
                CODE,
                message,
                model.span(imp),
                Severity.ERROR,
                manual="Replace the remaining torch_xla.runtime calls with their torch_xla.core."
                "xla_model equivalents, then remove the import.",
            )


def _is_mapped_use(model: ScriptModel, name: ast.Name) -> bool:
    node: ast.AST = name
    parent = model.parent(node)
    while isinstance(parent, ast.Attribute):
        node, parent = parent, model.parent(parent)
    return (
        isinstance(parent, ast.Call)
        and parent.func is node
        and model.call_name(parent) in LEGACY_MAP
    )


def _failing_in_module(other: ScriptModel) -> Iterator[Finding]:
    """What fails on torch_xla 2.9 in a workspace module the script imports."""
    yield from _api_findings(other, MODERN)
    yield from removed_name_imports(other, CODE)
    yield from moved_module_imports(other, CODE)
    yield from removed_module_imports(other, CODE, _safely_rewritten(other))


def _safely_rewritten(model: ScriptModel) -> Callable[[ast.Call], bool]:
    """Whether the modern call mapping rewrites ``call`` with a safe fix."""

    def rewritten(call: ast.Call) -> bool:
        q = model.call_name(call)
        mapping = MODERN.get(q) if q is not None else None
        return (
            mapping is not None
            and mapping.applies(call)
            and not mapping.review
            and mapping.emit(model, Emitter(model), call) is not None
        )

    return rewritten


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for f in _check(model, ctx):
        if ctx.target == "modern" and in_version_guard(model, f.span.start.line + 1):
            continue  # kept for older torch_xla behind a version test (parts/version_guards)
        yield f


def _check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from legacy_package_imports(model, CODE)  # gone from 1.13 and 2.9 alike
    if ctx.target == "modern":
        yield from _api_findings(model, MODERN)
        yield from gpu_era_env_findings(model, CODE)
        yield from removed_name_imports(model, CODE)
        yield from moved_module_imports(model, CODE)
        yield from removed_module_imports(model, CODE, _safely_rewritten(model))
        yield from unknown_xm_attributes(model, CODE, MAPPED_XM)
        yield from sibling_removed_apis(model, CODE, _failing_in_module)
    else:
        # The legacy target is SageMaker Training Compiler's torch_xla 1.13, where the
        # XLA:GPU environment variables are still the way to configure the run.
        yield from _api_findings(model, LEGACY_MAP)
        yield from _runtime_import_findings(model)


def _hover(title: str, body: str) -> str:
    return f"**XLA501 · {title}**\n\n{body}\n"


_TABLE = """\
| legacy (1.13) | modern (torch_xla 2.9) | in 2.9 |
|---|---|---|
| `xm.xla_device()` | `torch_xla.device()` | deprecated |
| `xm.mark_step()` | `torch_xla.sync()` | deprecated |
| `xm.xrt_world_size()` | `xr.world_size()` | **removed** |
| `xm.get_ordinal()` | `xr.global_ordinal()` | **removed** |
| `xm.get_local_ordinal()` | `xr.local_ordinal()` | both exist |
| `torch_xla.amp.GradScaler()` | `torch.amp.GradScaler("xla")` | **removed** |
| `torch_xla.amp.autocast(enabled=...)` | `torch.autocast("xla", dtype=torch.bfloat16, enabled=...)` | **TypeError** (device first) |
| `xmp.spawn(fn)` | `torch_xla.launch(fn)` | both exist |

The fix follows the chosen target: modern rewrites the left column, legacy the right one."""

HOVER = {
    f"{XM}.xla_device": _hover("`xm.xla_device()` → `torch_xla.device()`", _TABLE),
    f"{XM}.mark_step": _hover("`xm.mark_step()` → `torch_xla.sync()`", _TABLE),
    f"{XM}.xrt_world_size": _hover("`xm.xrt_world_size()` removed", _TABLE),
    f"{XM}.get_ordinal": _hover("`xm.get_ordinal()` removed", _TABLE),
    "torch_xla.amp.GradScaler": _hover("`torch_xla.amp.GradScaler` removed", _TABLE),
    XMP_SPAWN: _hover("`xmp.spawn` → `torch_xla.launch`", _TABLE),
    "torch_xla.device": _hover("`torch_xla.device()` (torch_xla ≥ 2.5)", _TABLE),
    "torch_xla.sync": _hover("`torch_xla.sync()` (torch_xla ≥ 2.5)", _TABLE),
    "torch_xla.launch": _hover("`torch_xla.launch(fn)` (torch_xla ≥ 2.5)", _TABLE),
    "torch_xla.runtime.world_size": _hover("`xr.world_size()` (torch_xla ≥ 2.0)", _TABLE),
    "torch_xla.runtime.global_ordinal": _hover("`xr.global_ordinal()` (torch_xla ≥ 2.0)", _TABLE),
    "torch_xla.runtime.local_ordinal": _hover("`xr.local_ordinal()` (torch_xla ≥ 2.0)", _TABLE),
}

RULE = Rule(
    code=CODE,
    name="deprecated-api",
    category=Category.MODERNISATION,
    summary="torch_xla API deprecated/removed in the chosen target (xm.xrt_world_size, xm.mark_step, ...) and XLA:GPU-era env vars",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover=HOVER,
)
