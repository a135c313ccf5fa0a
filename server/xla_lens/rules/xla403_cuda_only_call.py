"""XLA403: CUDA-only calls and settings that mean nothing (or fail) on an XLA device."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.model import Emitter, ScriptModel, keyword
from .base import (
    Category,
    Finding,
    Fix,
    RemoveKeyword,
    RemoveStatement,
    Replace,
    Rule,
    RuleContext,
    Severity,
)

CODE = "XLA403"
IS_AVAILABLE = "torch.cuda.is_available"
DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
# Calls with no effect worth keeping on XLA: the statement can go.
REMOVABLE = {
    "torch.cuda.synchronize": "to wait for the XLA device (e.g. for timing) use xm.wait_device_ops()",
    "torch.cuda.empty_cache": "XLA manages device memory itself",
    "torch.cuda.reset_peak_memory_stats": "XLA keeps no CUDA memory statistics",
    "torch.cuda.reset_max_memory_allocated": "XLA keeps no CUDA memory statistics",
    "torch.cuda.reset_accumulated_memory_stats": "XLA keeps no CUDA memory statistics",
    "torch.cuda.ipc_collect": "XLA manages device memory itself",
    "torch.cuda.set_device": "each XLA process gets its device from the launcher",
}
SEEDS = {"torch.cuda.manual_seed", "torch.cuda.manual_seed_all"}
MEMORY_QUERIES = {
    "torch.cuda.memory_allocated",
    "torch.cuda.max_memory_allocated",
    "torch.cuda.memory_reserved",
    "torch.cuda.max_memory_reserved",
    "torch.cuda.memory_summary",
    "torch.cuda.memory_stats",
    "torch.cuda.mem_get_info",
}
DEVICE_QUERIES = {
    "torch.cuda.device_count",
    "torch.cuda.get_device_name",
    "torch.cuda.get_device_properties",
}
BACKEND_PREFIXES = ("torch.backends.cudnn.", "torch.backends.cuda.")


def _guarded(model: ScriptModel, node: ast.AST) -> bool:
    """Inside ``if torch.cuda.is_available():`` — never runs on XLA, so harmless."""
    child = node
    for a in model.ancestors(node):
        if isinstance(a, ast.If) and child in a.body:
            if any(
                isinstance(c, ast.Call) and model.call_name(c) == IS_AVAILABLE
                for c in ast.walk(a.test)
            ):
                return True
        child = a
    return False


def _finding(
    model: ScriptModel,
    node: ast.AST,
    message: str,
    fix: Fix | None = None,
    manual: str | None = None,
) -> Finding:
    return Finding(CODE, message, model.span(node), Severity.WARNING, fix=fix, manual=manual)


def _calls(model: ScriptModel, target: str) -> Iterator[Finding]:
    for call in model.calls:
        q = model.call_name(call)
        if q is None:
            continue
        if _guarded(model, call):
            if q in SEEDS:
                # The guard is False on an XLA host: the XLA device then stays unseeded.
                yield from _guarded_seed(model, call, q, target)
            elif q == "torch.cuda.device_count":
                ws = xla_api.world_size(Emitter(model), target)  # type: ignore[arg-type]
                yield _finding(
                    model,
                    call,
                    f"{q}() runs only when CUDA is available: on an XLA host this branch is "
                    "skipped, so what it sets from the device count (replica count, per-device "
                    "batch size) keeps its non-CUDA value",
                    manual=f"Count XLA replicas with `{ws}` outside the torch.cuda.is_available() "
                    "check.",
                )
            continue
        stmt = model.enclosing_statement(call)
        if q in REMOVABLE:
            message = f"{q}() is CUDA-only: {REMOVABLE[q]}"
            if isinstance(stmt, ast.Expr) and stmt.value is call:
                fix = Fix(f"Remove {q}()", (RemoveStatement(model.span(stmt)),))
                yield _finding(model, call, message, fix=fix)
            else:
                yield _finding(model, call, message, manual="Remove the CUDA-only call by hand.")
        elif q in SEEDS:
            seed = call.args[0] if len(call.args) == 1 and not call.keywords else None
            if seed is None or isinstance(seed, ast.Starred):
                continue
            e = Emitter(model)
            code = xla_api.manual_seed(e, target, model.segment(seed))
            yield _finding(
                model,
                call,
                f"{q}() seeds CUDA only: the XLA device's random numbers stay unseeded; use {code}",
                fix=Fix(
                    f"Seed the XLA device: {code}", (Replace(model.span(call), code), *e.imports)
                ),
            )
        elif q in MEMORY_QUERIES:
            yield _finding(
                model,
                call,
                f"{q}() reports CUDA memory: on XLA it reads nothing useful",
                manual="Use `xm.get_memory_info(device)` (bytes used / limit of the XLA device) "
                "and adapt the code that reads the result.",
            )
        elif q in DEVICE_QUERIES:
            ws = xla_api.world_size(Emitter(model), target)
            yield _finding(
                model,
                call,
                f"{q}() counts/describes CUDA devices, not XLA devices",
                manual=f"For the number of XLA processes use `{ws}`; for the device kind use "
                "`torch_xla.runtime.device_type()` (modern) / `xm.xla_device_hw(device)`.",
            )


def _guarded_seed(model: ScriptModel, call: ast.Call, q: str, target: str) -> Iterator[Finding]:
    seed = call.args[0] if len(call.args) == 1 and not call.keywords else None
    if seed is None or isinstance(seed, ast.Starred):
        return
    code = xla_api.manual_seed(Emitter(model), target, model.segment(seed))  # type: ignore[arg-type]
    yield _finding(
        model,
        call,
        f"{q}() runs only when CUDA is available: on an XLA host it is skipped and the XLA "
        f"device's random numbers stay unseeded; seed it unconditionally with {code}",
        manual=f"Call {code} outside the torch.cuda.is_available() check (after the XLA "
        "device is chosen).",
    )


def _backend_settings(model: ScriptModel) -> Iterator[Finding]:
    for node in model.nodes_of(ast.Assign):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        q = model.qualname(node.targets[0])
        if q is None or not q.startswith(BACKEND_PREFIXES) or _guarded(model, node):
            continue
        yield _finding(
            model,
            node.targets[0],
            f"{q} configures cuDNN/CUDA kernels: it has no effect on an XLA device",
            fix=Fix(f"Remove the {q} setting", (RemoveStatement(model.span(node)),)),
        )


def _pin_memory(model: ScriptModel) -> Iterator[Finding]:
    for call in model.calls_to(*DATALOADERS):
        kw = keyword(call, "pin_memory")
        if kw is None or not (isinstance(kw.value, ast.Constant) and kw.value.value is True):
            continue
        span = model.span(call)
        ops = [RemoveKeyword(span, "pin_memory")]
        if keyword(call, "pin_memory_device") is not None:
            ops.append(RemoveKeyword(span, "pin_memory_device"))
        yield _finding(
            model,
            kw.value,
            "pin_memory=True pins host memory for CUDA copies: XLA transfers do not use it "
            "(MpDeviceLoader overlaps the copies instead)",
            fix=Fix("Remove pin_memory=True", tuple(ops)),
        )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _calls(model, ctx.target)
    yield from _backend_settings(model)
    yield from _pin_memory(model)


HOVER = """\
**XLA403 · CUDA-only call**

`torch.cuda.*` utilities and `torch.backends.cudnn.*` settings act on CUDA only; on an XLA
device they do nothing or fail (no CUDA driver on TPU/Trainium hosts).

| CUDA | XLA |
|---|---|
| `torch.cuda.synchronize()` | remove; `xm.wait_device_ops()` to wait (timing) |
| `torch.cuda.empty_cache()`, `reset_peak_memory_stats()`, `set_device()` | remove |
| `torch.backends.cudnn.benchmark = ...` | remove |
| `DataLoader(pin_memory=True)` | drop `pin_memory` |
| `torch.cuda.manual_seed(s)` | modern `torch_xla.manual_seed(s)`, legacy `xm.set_rng_state(s)` |
| `torch.cuda.max_memory_allocated()` | `xm.get_memory_info(device)` |
| `torch.cuda.device_count()` | modern `xr.world_size()`, legacy `xm.xrt_world_size()` |
"""

RULE = Rule(
    code=CODE,
    name="cuda-only-call",
    category=Category.PERFORMANCE,
    summary="CUDA-only calls (torch.cuda.synchronize/empty_cache/manual_seed, cudnn flags, pin_memory) → removed or the XLA equivalent",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        **{q: HOVER for q in (*REMOVABLE, *SEEDS, *MEMORY_QUERIES, *DEVICE_QUERIES)},
        "torch.backends.cudnn.benchmark": HOVER,
        "torch.backends.cudnn.deterministic": HOVER,
        "torch.utils.data.DataLoader(pin_memory=)": HOVER,
    },
)
