"""XLA405: CUDA-only APIs and libraries with no XLA meaning (streams, NVTX, CUDA profiling,
CUDA tensor types, SyncBatchNorm, the CUDA OOM exception, apex/bitsandbytes/xformers...).

XLA403 removes or translates the ``torch.cuda`` calls that have an equivalent; what is left
here has none a tool can write for you: each finding says what it does on an XLA device
(fails, or silently does nothing) and what to use instead. No automatic fix: every
replacement changes the program's structure; except for ``with torch.cuda.device(i):``,
whose body is kept without it (``parts/cuda_device_context.py``). (A CUDA tensor-type alias used only to build and
cast tensors is XLA101's, which rewrites it for review: see semantic/cuda_flag_idioms.py.)
Also ``nn.Embedding(sparse=True)``, whose sparse gradients torch_xla lacks (review fix
``sparse=False``: ``parts/sparse_embeddings.py``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

from ..semantic.cuda_tensor_types import TENSOR_DTYPES, tensor_type_aliases
from ..semantic.device_sites import availability_guards
from ..semantic.model import ScriptModel, const_str
from .base import Category, Finding, Rule, RuleContext, Severity
from .parts.cuda_device_context import device_context_findings
from .parts.cuda_libraries import (
    CUDA_LIBRARIES,
    LIBRARY_MANUAL,
    apex_site_findings,
    library_findings,
)
from .parts.cuda_module_holders import (
    MESH_ADVICE,
    MESH_CALLS,
    MESH_MANUAL,
    cuda_module_holders,
    function_name,
    is_not_a_use,
    patched_attributes,
)
from .parts.cuda_shared_libraries import shared_library_findings
from .parts.deepspeed_configs import accelerate_deepspeed_uses, deepspeed_configs
from .parts.device_kind_dispatch import device_kind_raises
from .parts.flash_attention_flags import flash_attention_flags
from .parts.kbit_quantization import quantization_findings
from .parts.shared_memory_moves import shared_memory_findings
from .parts.sibling_library_imports import sibling_library_imports
from .parts.sparse_embeddings import sparse_embedding_findings

CODE = "XLA405"
# Handled by other rules (pickers, AMP, XLA403's calls): not repeated here.
HANDLED_ELSEWHERE = (
    "torch.cuda.is_available",
    "torch.cuda.amp",
    "torch.cuda.synchronize",
    "torch.cuda.empty_cache",
    "torch.cuda.reset_peak_memory_stats",
    "torch.cuda.reset_max_memory_allocated",
    "torch.cuda.reset_accumulated_memory_stats",
    "torch.cuda.ipc_collect",
    "torch.cuda.set_device",
    "torch.cuda.manual_seed",
    "torch.cuda.memory_",
    "torch.cuda.max_memory_",
    "torch.cuda.mem_get_info",
    "torch.cuda.device_count",
    "torch.cuda.get_device_name",
    "torch.cuda.get_device_properties",
    "torch.cuda.current_device",
    "torch.cuda.device",  # device_count and the like above; torch.cuda.device(i) below
    "torch.nn.parallel.data_parallel.DataParallel",  # XLA110
)
# What each CUDA-only API does on XLA, and what to do instead (first matching prefix wins).
ADVICE: tuple[tuple[str, str], ...] = (
    (
        "torch.cuda.OutOfMemoryError",
        "is never raised on XLA: running out of device memory raises RuntimeError "
        "(RESOURCE_EXHAUSTED) there, so this handler never runs; catch RuntimeError and "
        "check for 'RESOURCE_EXHAUSTED' if the fallback matters",
    ),
    (
        "torch.cuda.nvtx",
        "marks NVTX ranges for NVIDIA profilers only; use "
        "`torch_xla.debug.profiler.Trace(name)` / `xp.trace_detached` for XLA traces",
    ),
    (
        "torch.cuda.cudart",
        "drives the CUDA profiler; on XLA capture a trace with `torch_xla.debug.profiler`",
    ),
    (
        "torch.cuda.Stream",
        "CUDA streams do not exist on XLA (the runtime schedules transfers itself); "
        "remove the stream code, and let pl.MpDeviceLoader overlap host-to-device copies",
    ),
    ("torch.cuda.current_stream", "CUDA streams do not exist on XLA; remove the stream code"),
    ("torch.cuda.stream", "CUDA streams do not exist on XLA; remove the stream code"),
    (
        "torch.cuda.Event",
        "CUDA events do not exist on XLA; time steps with time.perf_counter() "
        "after xm.wait_device_ops()",
    ),
    ("torch.cuda.graphs", "CUDA graphs do not exist on XLA (XLA compiles the whole step)"),
    ("torch.cuda.CUDAGraph", "CUDA graphs do not exist on XLA (XLA compiles the whole step)"),
    (
        "torch.cuda.is_bf16_supported",
        "asks the CUDA driver; on an XLA host it is False or fails, so bf16 is never chosen — "
        "TPUs and Trainium compute in bf16 natively: choose bf16 on XLA",
    ),
    (
        "torch.cuda.",
        "is a CUDA tensor type or CUDA-only utility: on XLA it fails (no CUDA driver) or "
        "places nothing on the XLA device; use the XLA device (`torch_xla.device()`) with "
        "plain torch types (`torch.float32`, `tensor.to(device)`)",
    ),
    (
        "torch.nn.parallel.data_parallel",
        "scatters the batch over CUDA devices: on XLA each process drives one device; run "
        "one replica per device with torch_xla.launch and call the module directly",
    ),
    *(
        (
            f"torch.nn.parallel.{name}",
            # ChineseNMT's MultiGPULossCompute (held-out 98): DataParallel taken apart by hand.
            f"is DataParallel by hand ({what} the CUDA devices listed): XLA devices are not "
            "addressed that way (one process drives one device); run one replica per device "
            "with torch_xla.launch and compute the loss on this process's device",
        )
        for name, what in (
            ("replicate", "copies the module onto"),
            ("scatter_gather", "splits and gathers tensors over"),
            ("scatter", "splits tensors over"),
            ("parallel_apply", "runs module copies in threads on"),
            ("gather", "gathers outputs from"),
        )
    ),
    (
        "torch.nn.SyncBatchNorm",
        # torch 2.9's SyncBatchNorm.forward checks the device only when it must sync
        # (training, a process group up): alone on one XLA device it is a BatchNorm (measured;
        # Depth-Anything-V2's model has no BatchNorm to convert, held-out 69).
        "needs CUDA/NCCL: with a process group up, every SyncBatchNorm layer's training "
        "forward raises on XLA tensors (ValueError 'SyncBatchNorm expected input tensor to be "
        "on GPU', torch 2.9; a model without BatchNorm layers has none); keep BatchNorm per "
        "replica, or all-reduce the statistics yourself with xm.all_reduce",
    ),
    (
        "torch.profiler.ProfilerActivity.CUDA",
        "records CUDA kernels only; on XLA use `torch_xla.debug.profiler` traces",
    ),
)
# Classes that fail only when built or run: named as a type (an isinstance tuple, a
# registry) they work on XLA too (held-out 10 r2: DINO's has_batchnorms).
CLASSES_NAMED_SAFELY = ("torch.nn.SyncBatchNorm",)
# What to do instead, as a sentence of its own (the CLI prints it after "no automatic fix:"),
# for each ADVICE prefix.
MANUAL = {
    "torch.cuda.OutOfMemoryError": "Catch RuntimeError and check its message for "
    "'RESOURCE_EXHAUSTED' where the out-of-memory fallback matters.",
    "torch.cuda.nvtx": "Replace the NVTX ranges with torch_xla.debug.profiler.Trace(name) "
    "blocks, or remove them.",
    "torch.cuda.cudart": "Remove the CUDA profiler calls and capture a trace with "
    "torch_xla.debug.profiler instead.",
    "torch.cuda.Stream": "Remove the stream code and let pl.MpDeviceLoader overlap the "
    "host-to-device copies.",
    "torch.cuda.current_stream": "Remove the stream code; the XLA runtime orders the work itself.",
    "torch.cuda.stream": "Remove the stream code; the XLA runtime orders the work itself.",
    "torch.cuda.Event": "Time the steps with time.perf_counter() after xm.wait_device_ops() "
    "instead of CUDA events.",
    "torch.cuda.graphs": "Remove the CUDA graph capture and run the step itself; XLA compiles "
    "the whole step.",
    "torch.cuda.CUDAGraph": "Remove the CUDA graph capture and run the step itself; XLA "
    "compiles the whole step.",
    "torch.cuda.is_bf16_supported": "Choose bfloat16 directly when running on XLA instead of "
    "asking the CUDA driver.",
    "torch.cuda.": "Replace the call with its XLA counterpart (torch_xla / xm) or remove it; "
    "an XLA host has no CUDA driver to ask.",
    **{
        f"torch.nn.parallel.{name}": "Drop the hand-made replication: compute on this "
        "process's XLA device and start one process per device with torch_xla.launch (with "
        "xm.optimizer_step or DDP over the xla backend to reduce the gradients)."
        for name in ("replicate", "scatter_gather", "scatter", "parallel_apply", "gather")
    },
    "torch.nn.parallel.data_parallel": "Run one replica per device with torch_xla.launch and "
    "call the module directly.",
    "torch.nn.SyncBatchNorm": "Keep a plain BatchNorm per replica, or all-reduce its "
    "statistics with xm.all_reduce.",
    "torch.profiler.ProfilerActivity.CUDA": "Record the trace with torch_xla.debug.profiler "
    "instead of the CUDA profiler activity.",
}
TENSOR_TYPE_MANUAL = (
    "Build the tensor on the XLA device with a torch dtype instead of the CUDA type: "
    "torch.tensor(data, dtype=torch.float32, device=device), or .to(device, torch.float32) "
    "where the script casts with .type()."
)
DEVICE_MODULE_MANUAL = (
    "Read device memory with xm.get_memory_info(device) on XLA and drop the cache and "
    "statistics calls made through the CUDA module."
)
ALIAS_MANUAL = (
    "Bind the alias to the XLA equivalent XLA403 writes for this call (torch_xla.sync for "
    "torch.cuda.synchronize, ...), or call that equivalent directly."
)


@functools.lru_cache(maxsize=4096)
def _advice(qualname: str) -> tuple[str, str] | None:
    """What the API does on XLA (the message) and what to do instead (the manual). Asked for
    every attribute chain of the file, a few hundred distinct ones: each judged once."""
    if qualname.startswith(HANDLED_ELSEWHERE):
        return None
    for prefix, text in ADVICE:
        if (
            qualname == prefix
            or qualname.startswith(prefix if prefix.endswith(".") else prefix + ".")
            or qualname == prefix.rstrip(".")
        ):
            manual = MANUAL[prefix]
            if prefix == "torch.cuda." and _is_cuda_tensor_type(qualname):
                manual = TENSOR_TYPE_MANUAL
            return text, manual
    return None


def _is_cuda_tensor_type(qualname: str) -> bool:
    """``torch.cuda.FloatTensor`` and the other legacy CUDA tensor types."""
    head, _, tail = qualname.rpartition(".")
    return head == "torch.cuda" and tail in TENSOR_DTYPES


def _outermost_chains(model: ScriptModel) -> Iterator[ast.Attribute]:
    """Attribute chains (``torch.cuda.nvtx.range_push``) once each, at their longest."""
    for node in model.nodes_of(ast.Attribute):
        parent = model.parent(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            continue
        assert isinstance(node, ast.Attribute)
        yield node


def _aliased(model: ScriptModel, node: ast.Attribute, qualname: str) -> bool:
    """``sync = torch.cuda.synchronize``: a CUDA function XLA403 translates, used as a value."""
    if not qualname.startswith(HANDLED_ELSEWHERE) or qualname.startswith(
        ("torch.cuda.is_available", "torch.cuda.amp", "torch.cuda.device")
    ):
        return False
    parent = model.parent(node)
    return not (isinstance(parent, ast.Call) and parent.func is node)


TYPE_TESTS = frozenset({"isinstance", "issubclass"})
HAND_PARALLEL = tuple(
    f"torch.nn.parallel.{n}"
    for n in ("replicate", "scatter_gather", "scatter", "parallel_apply", "gather")
)


def _named_as_a_type(model: ScriptModel, node: ast.AST) -> bool:
    """The class is named, not chosen to build layers: a member of a tuple/list/set
    (``bn_types = (nn.BatchNorm1d, nn.SyncBatchNorm)``), an ``isinstance`` argument or a
    comparison. Not a value picked for a builder (DIST_KD's ``BatchNorm2d = nn.SyncBatchNorm
    if args.distributed else nn.BatchNorm2d`` handed on as ``norm_layer=``, held-out 99: every
    distributed forward raised on XLA) and not a call."""
    parent = model.parent(node)
    if isinstance(parent, ast.Tuple | ast.List | ast.Set | ast.Compare):
        return True
    return (
        isinstance(parent, ast.Call)
        and parent.func is not node
        and isinstance(parent.func, ast.Name)
        and parent.func.id in TYPE_TESTS
    )


def _api_findings(model: ScriptModel) -> Iterator[Finding]:
    reported: set[int] = set()
    by_hand: set[int] = set()  # scopes whose hand-made DataParallel is reported
    # Tensor-type aliases whose every use XLA101 rewrites are reported there, with the fix.
    aliases = {id(a.cuda_type): a.blocker for a in tensor_type_aliases(model)}
    patched = patched_attributes(model)
    for node in _outermost_chains(model):
        q = model.qualname(node)
        if q is None or aliases.get(id(node)) == "" or is_not_a_use(model, node, patched):
            continue
        # Report the longest known prefix once per line: `torch.cuda.nvtx.range_push(...)`.
        advice = _advice(q)
        if q == "torch.cuda":
            advice = (
                "is used as a device module here: every call made through it "
                "(empty_cache, memory_allocated, ...) acts on CUDA only; on XLA use "
                "xm.get_memory_info(device) and drop the cache/statistics calls",
                DEVICE_MODULE_MANUAL,
            )
        if advice is None and _aliased(model, node, q):
            advice = (
                "is taken as a value here (an alias), so XLA403 cannot rewrite its calls: "
                "every call through the alias runs CUDA-only code; pick the XLA equivalent "
                "where the alias is made (see XLA403)",
                ALIAS_MANUAL,
            )
        if advice is None or node.lineno in reported:
            continue
        if q.startswith(CLASSES_NAMED_SAFELY) and _named_as_a_type(model, node):
            continue  # ``isinstance(m, (nn.BatchNorm2d, nn.SyncBatchNorm))`` builds nothing
        if q.startswith(HAND_PARALLEL):
            # DataParallel by hand is one idiom however many of its pieces a function uses.
            scope = id(model.enclosing_function(node) or model.tree)
            if scope in by_hand:
                continue
            by_hand.add(scope)
        reported.add(node.lineno)
        shown = q if not q.startswith("torch.cuda.") else "torch.cuda." + q.split(".")[2]
        yield Finding(
            CODE,
            f"{shown} {advice[0]}",
            model.span(node),
            Severity.WARNING,
            manual=advice[1]
            + (
                f" XLA101 offers no fix for this alias: {aliases[id(node)]}."
                if id(node) in aliases
                else ""
            ),
        )


def _default_tensor_type(model: ScriptModel) -> Iterator[Finding]:
    for call in model.calls_to("torch.set_default_tensor_type"):
        arg = call.args[0] if call.args else None
        text = const_str(arg) or (model.segment(arg) if arg is not None else "")
        if "cuda" not in text:
            continue
        span = model.span(call)
        guarded = any(g.contains(span) for g, _test, _kind in availability_guards(model))
        yield Finding(
            CODE,
            "the default tensor type is a CUDA type: every bare constructor (torch.Tensor(...), "
            "torch.randn(...)) lands on CUDA; "
            + (
                "on an XLA host its CUDA availability guard skips it, so those tensors stay on "
                "the CPU beside the XLA ones"
                if guarded
                else "on XLA that fails, and removing the line leaves those tensors on the CPU"
            ),
            model.span(call),
            Severity.WARNING,
            manual="Create tensors on the XLA device explicitly (`device=device`), or set "
            "`torch.set_default_device(device)` with the XLA device after checking every "
            "constructor it affects.",
        )


def _library_sync_batchnorm(qualname: str | None) -> bool:
    """timm's ``convert_sync_batchnorm`` (timm.layers, timm.models.layers): it builds the same
    torch SyncBatchNorm layers (held-out 32, efficientdet's train.py)."""
    return (
        qualname is not None
        and qualname.startswith("timm.")
        and qualname.endswith(".convert_sync_batchnorm")
    )


def _cuda_methods(model: ScriptModel) -> Iterator[Finding]:
    holders = cuda_module_holders(model)
    for call in model.calls:
        name = function_name(call)
        if _library_sync_batchnorm(model.call_name(call)):
            yield Finding(
                CODE,
                f"{model.segment(call.func)} (timm) turns BatchNorm layers into "
                f"torch.nn.SyncBatchNorm, which {_advice('torch.nn.SyncBatchNorm')[0]}",  # type: ignore[index]
                model.span(call),
                Severity.WARNING,
                manual=MANUAL["torch.nn.SyncBatchNorm"],
            )
        elif "xformers" in name:
            advice = CUDA_LIBRARIES["xformers"]
            yield Finding(
                CODE,
                f"xformers memory-efficient attention is CUDA-only: {advice}",
                model.span(call),
                Severity.WARNING,
                manual=LIBRARY_MANUAL["xformers"],
            )
        elif model.call_name(call) in MESH_CALLS or name == "build_device_mesh":
            yield Finding(CODE, MESH_ADVICE, model.span(call), Severity.WARNING, manual=MESH_MANUAL)
        elif isinstance(call.func, ast.Attribute) and holders:
            recv = call.func.value
            held = (
                recv.id
                if isinstance(recv, ast.Name)
                else (recv.attr if isinstance(recv, ast.Attribute) else None)
            )
            # `torch.cuda.foo()` is the module path itself (reported above), not a holder.
            if held in holders and model.qualname(recv) is None:
                advice = (
                    f"`{model.segment(call.func)}` calls into torch.cuda (the device module "
                    "falls back to it): memory statistics and cache calls act on CUDA only; "
                    "on XLA read xm.get_memory_info(device)"
                )
                yield Finding(
                    CODE, advice, model.span(call), Severity.WARNING, manual=DEVICE_MODULE_MANUAL
                )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _cuda_methods(model)
    yield from library_findings(model, CODE)
    yield from shared_library_findings(model, CODE)
    yield from sibling_library_imports(model, CODE)
    yield from flash_attention_flags(model, CODE)
    yield from apex_site_findings(model, CODE)
    yield from quantization_findings(model, CODE)
    yield from shared_memory_findings(model, CODE)
    yield from _api_findings(model)
    yield from _default_tensor_type(model)
    yield from device_context_findings(model, CODE)
    yield from sparse_embedding_findings(model, CODE)
    yield from deepspeed_configs(model, CODE)
    yield from accelerate_deepspeed_uses(model, CODE)
    yield from device_kind_raises(model, CODE)


HOVER = """\
**XLA405 · CUDA-only API**

Streams, events, NVTX ranges, the CUDA profiler, CUDA tensor types (`torch.cuda.FloatTensor`),
`torch.cuda.OutOfMemoryError`, `SyncBatchNorm` and libraries built on CUDA kernels (apex,
bitsandbytes, xformers, flash-attn) have no XLA meaning: on an XLA device they fail, or do
nothing without a word. Each needs a change by hand; the diagnostic says which.
`with torch.cuda.device(i):` raises on an XLA host (no CUDA driver) unless `i` is -1: the fix
drops the `with` and keeps its body.
"""

RULE = Rule(
    code=CODE,
    name="cuda-only-api",
    category=Category.CONVERSION,
    summary="CUDA-only APIs and libraries with no XLA equivalent (streams, NVTX, CUDA tensor types, OOM handler, SyncBatchNorm, apex, bitsandbytes, xformers) → rewrite by hand; torch.cuda.device(i) contexts → dropped",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.cuda.OutOfMemoryError": HOVER,
        "torch.cuda.nvtx": HOVER,
        "torch.cuda.Stream": HOVER,
        "torch.cuda.FloatTensor": HOVER,
        "torch.nn.SyncBatchNorm": HOVER,
        "torch.set_default_tensor_type": HOVER,
        "torch.cuda.device": HOVER,
    },
)
