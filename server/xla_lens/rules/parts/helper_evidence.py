"""XLA118's evidence: what in a helper module needs converting, per module and per top-level
function (with the functions it calls, and the module-level device they place on), found by
running the conversion rules over the module as read from disk (never imported or run).
Cached per path, size, mtime, target and depth, so the editor pays for a module once."""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from ...semantic.cuda_branches import cuda_only_branch
from ...semantic.diskread import read_regular
from ...semantic.model import ScriptModel
from ...semantic.module_globals import global_reads
from ...semantic.parameter_defaults import parameter_defaults
from ...semantic.workspace import MAX_BYTES, module_file
from ...semantic.workspace_calls import HelperTarget, parsed_module
from ...semantic.xla_branches import regions
from ..base import Finding, RuleContext, Severity
from .device_parameters import device_parameter
from .helper_reach import reached_functions
from .xla_branch_filter import KEPT_UNDER_GUARD

CODE = "XLA118"
# Rules whose findings in a helper mean the helper must change for the script to run on XLA.
# Left out: performance advice, findings that depend on the calling script (the launcher,
# the optimizer step, loops and syncs), and informational ones.
EVIDENCE_CODES = frozenset(
    {
        "XLA101", "XLA102", "XLA103", "XLA108", "XLA110", "XLA111", "XLA115", "XLA116",
        "XLA117", "XLA119", "XLA202", "XLA203", "XLA205", "XLA403", "XLA405", "XLA406",
    }
)  # fmt: skip
# Evidence that holds only for some callers: a training loop that never marks the step needs
# its sync unless the caller hands it a loader that syncs (``pl.MpDeviceLoader``). DETR's
# ``train_one_epoch`` in engine.py, handed a plain DataLoader by main.py (held-out 34).
LOOP_SYNC = "XLA107"
# XLA117's batch field handed to the model unmoved (DataParallel/DDP moved it on CUDA): the
# helper's loop gives the XLA model a CPU tensor whatever the caller does (3D-ResNets'
# validation.py, held-out 85).
UNMOVED_FIELD = "goes to the model without being moved"
# Evidence that only counts beside other evidence: a rank read from torchrun's env is how
# many helpers print on rank 0 only (``print0``), harmless to the run on its own.
SUPPORTING = frozenset({"XLA202"})
# XLA403's calls that set up or need CUDA (its memory queries, cache frees and cuDNN flags
# are harmless on XLA and stay reported in their own file only).
CUDA_SETUP_CALLS = frozenset(
    {
        "torch.cuda.set_device", "torch.cuda.synchronize", "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all", "torch.cuda.device_count", "torch.cuda.get_device_name",
        "torch.cuda.get_device_properties", "torch.accelerator.set_device_index",
        "torch.accelerator.set_device_idx", "torch.accelerator.synchronize",
        "torch.accelerator.device_count",
    }
)  # fmt: skip
DEVICE_QUERIES = frozenset(
    {
        "torch.cuda.device_count", "torch.cuda.get_device_name",
        "torch.cuda.get_device_properties", "torch.accelerator.device_count",
    }
)  # fmt: skip
# Which evidence the message names first: the setup that fails outright before env reads.
PRIORITY = (
    "XLA205", "XLA403", "XLA119", "XLA101", "XLA102", "XLA110", "XLA108", "XLA405", "XLA103",
)  # fmt: skip
_CACHE_LIMIT = 64
_IGNORE = re.compile(r"#\s*xla-lens:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")
NVIDIA_SMI = "`nvidia-smi` queries NVIDIA GPUs, which an XLA host does not have"
DEVICE_QUERY_RANK = PRIORITY.index("XLA405")


# Evidence outside the functions a call runs that still counts: a device chosen at the top of
# the module (``device = torch.device("cuda" if ... else "cpu")``) that they place on. An env
# read there (``LOCAL_RANK = int(os.getenv(...))``) only supports other evidence: left out.
GLOBAL_CODES = frozenset({"XLA101"})


@dataclass(frozen=True)
class Evidence:
    line: int  # 1-based, in the helper's file
    code: str
    what: str
    rank: int = 0  # which the message names first (lowest)
    # A parameter's CUDA default (name, positional index or -1): no evidence for a call that
    # passes the parameter (nanochat's loader called with device=device).
    default_of: tuple[str, int] | None = None
    # The parameter an autocast's device comes from (XLA102 could not follow it): no
    # evidence for a call that passes the XLA device there.
    device_of: tuple[str, int] | None = None


@dataclass(frozen=True)
class ModuleEvidence:
    lines: tuple[Evidence, ...]  # all of the module's evidence, in line order
    functions: dict[str, tuple[Evidence, ...]]  # each top-level function's (with its callees)


_NONE = ModuleEvidence((), {})
# (path, size, mtime, target, depth) -> the module's evidence
_cache: dict[tuple[str, int, int, str, int], ModuleEvidence] = {}
# Helper modules followed one into another: a helper's helpers count, not theirs.
MAX_DEPTH = 1
_depth = threading.local()


def clear_cache() -> None:
    _cache.clear()


def _short(message: str) -> str:
    """The first clause of a finding's message, short enough to quote in another."""
    text = message.split(" (fix needs review", 1)[0].split(" (the fix needs review", 1)[0]
    text = text.split("; ", 1)[0]
    if len(text) > 110:
        cut = text.rfind(": ", 0, 110)
        text = text[:cut] if cut > 30 else text[:107].rsplit(" ", 1)[0] + "..."
    return text


def _silenced_in_file(lines: list[str], f: Finding) -> bool:
    line = f.span.start.line
    m = _IGNORE.search(lines[line]) if line < len(lines) else None
    if m is None:
        return False
    codes = m.group("codes")
    return codes is None or any(f.code.startswith(c.strip().upper()) for c in codes.split(","))


def _built_on_xla_helpers(path: Path, tree: ast.Module) -> bool:
    """The module imports a module of the project that imports torch_xla (resnet18_pytorch_
    jax_tpu's trainer over ``utils.tpu_utils``: its loader, sync and optimizer step are
    torch_xla's, held-out 90): part of an XLA program already."""
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        try:
            found = module_file(str(path), node.module, node.level)
            text = read_regular(found, MAX_BYTES) if found is not None else b""
        except (OSError, ValueError):
            continue
        if b"import torch_xla" in text or b"from torch_xla" in text:
            return True
    return False


PLACING_METHODS = frozenset({"to", "cuda"})


def _places_around(model: ScriptModel, line: int) -> bool:
    """Whether the loop at 1-based ``line`` may train on a device: its function moves
    something to one (``.to(...)``, ``.cuda()``, ``device=``), or the loop uses what the
    function is handed (a model or loader from the caller, ``self``). A loop over a model the
    function builds and never places is a CPU loop."""
    loop = next(
        (n for n in model.nodes_of(ast.For, ast.While) if n.lineno == line),  # type: ignore[attr-defined]
        None,
    )
    fn = model.enclosing_function(loop) if loop is not None else None
    if loop is None or fn is None:
        return True
    params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    if any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(loop)):
        return True
    return any(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr in PLACING_METHODS)
            or any(k.arg == "device" for k in n.keywords)
        )
        for n in ast.walk(fn)
    )


def _analyse(path: Path, target: str) -> ModuleEvidence:
    """The evidence of the module ``path``, and of each of its top-level functions."""
    from ..registry import all_rules  # the registry imports every rule, this one too

    parsed = parsed_module(path)
    if parsed is None:
        return _NONE
    # "<sibling>": the rules follow no further imports from the helper's module.
    model = ScriptModel(parsed.source, parsed.tree, "<sibling>")
    if model.uses_torch_xla or _built_on_xla_helpers(path, parsed.tree):
        return _NONE  # converted (or written for XLA) already: its own file's business
    ctx = RuleContext(target=target)  # type: ignore[arg-type]
    found: list[Finding] = []
    for rule in all_rules():
        if rule.code not in EVIDENCE_CODES and rule.code != LOOP_SYNC:
            continue
        try:
            found.extend(rule.check(model, ctx))
        except Exception:  # noqa: BLE001  a rule broken on someone else's file says nothing
            continue
    found.extend(_helpers_of_helper(parsed.source, parsed.tree, path, ctx))
    calls_at = {(c.lineno, c.col_offset): model.call_name(c) for c in model.calls}
    # kwt's seed_everything (held-out 91): torch.cuda.manual_seed_all under the availability
    # test is no evidence.
    guarded = {
        (c.lineno, c.col_offset)
        for c in model.calls
        if (model.call_name(c) or "") in CUDA_SETUP_CALLS and cuda_only_branch(model, c)
    }
    defaults = parameter_defaults(model)
    evidence: dict[tuple[int, str], Evidence] = {}
    for f in found:
        if f.severity > Severity.WARNING or _silenced_in_file(model.lines, f):
            continue
        start = (f.span.start.line + 1, f.span.start.col)
        if f.code == "XLA403" and calls_at.get(start) not in CUDA_SETUP_CALLS:
            continue
        if f.code == "XLA403" and start in guarded:
            continue  # under ``if torch.cuda.is_available():``: never runs on an XLA host
        if regions(model).not_xla_at(f.span) is not None:
            # The CUDA side of the helper's own XLA/CUDA switch (``elif flags.device ==
            # "cuda":`` after the ``"xla"`` branch: MLPerf UNet3D's loaders, held-out 110).
            continue
        if (
            f.code == "XLA405"
            and calls_at.get(start) not in KEPT_UNDER_GUARD
            and regions(model).cuda_only_at(f.span) is not None
        ):
            # tabular-dl-revisiting-models' environment report (held-out 107): its
            # ``torch.cuda.nccl.version()`` sits under ``if torch.cuda.is_available():``.
            continue
        if f.code == "XLA405" and start not in calls_at:
            continue  # named, not run: ``bn_types = (nn.BatchNorm2d, nn.SyncBatchNorm)``
        if f.code == LOOP_SYNC and not _places_around(model, f.span.start.line + 1):
            # minimalRL's ``seed_test``: a loop training a model it never places (held-out
            # 109): a CPU loop, nothing to sync on XLA.
            continue
        if f.code == "XLA117" and UNMOVED_FIELD not in f.message:
            continue  # "places nothing": whoever calls it may place the model and batches
        # One per line and rule: ``'RANK' in os.environ and 'WORLD_SIZE' in os.environ``.
        rank = PRIORITY.index(f.code) if f.code in PRIORITY else len(PRIORITY)
        if calls_at.get(start) in DEVICE_QUERIES:
            rank = PRIORITY.index("XLA405")  # a count, not a setup that fails
        what = _short(f.message)
        if f.code == CODE:
            # A helper's own helper call: "x() runs code in util/misc.py that needs converting".
            what = re.sub(r" \([^)]*\)", "", f.message.split(" for XLA", 1)[0])
        default_of = defaults.get(f.span) if f.code == "XLA101" else None
        device_of = device_parameter(model, f.span) if f.code == "XLA102" else None
        evidence.setdefault(
            (start[0], f.code), Evidence(start[0], f.code, what, rank, default_of, device_of)
        )
    for line in _nvidia_smi_lines(model):
        evidence.setdefault((line, CODE), Evidence(line, CODE, NVIDIA_SMI, DEVICE_QUERY_RANK))
    lines = tuple(e for _, e in sorted(evidence.items()))
    out = {}
    for name, fn in parsed.functions.items():
        reached = reached_functions(model, fn)
        ranges = [(r.lineno, r.end_lineno or r.lineno) for r in reached]
        tops = global_reads(parsed.tree, reached)
        mine = tuple(
            e for e in lines if _within(e, ranges) or (e.code in GLOBAL_CODES and _within(e, tops))
        )
        if any(e.code not in SUPPORTING for e in mine):
            out[name] = mine
    return ModuleEvidence(lines, out)


def _helpers_of_helper(
    source: str, tree: ast.Module, path: Path, ctx: RuleContext
) -> list[Finding]:
    """This rule's own findings in the helper's module, one module further (DETR's
    ``evaluate()`` in engine.py runs ``MetricLogger.synchronize_between_processes`` of
    util/misc.py, which allocates on "cuda"; held-out 34): the helper's calls into its own
    helpers are evidence too, ``MAX_DEPTH`` modules from the script at most."""
    if getattr(_depth, "value", 0) >= MAX_DEPTH:
        return []
    # Imported here: the rule module imports this one.
    from ..xla118_workspace_helper import _check  # noqa: PLC0415

    _depth.value = getattr(_depth, "value", 0) + 1
    try:
        return list(_check(ScriptModel(source, tree, str(path)), ctx, once=False))
    except Exception:  # noqa: BLE001  as for the other rules: someone else's file says nothing
        return []
    finally:
        _depth.value -= 1


def _nvidia_smi_lines(model: ScriptModel) -> list[int]:
    """``os.popen("nvidia-smi -L")``, ``subprocess.run(["nvidia-smi", ...])``: a GPU count or
    query no conversion rule sees (a string, not an API)."""
    out = []
    for call in model.calls:
        for arg in call.args:
            first = arg.elts[0] if isinstance(arg, ast.List | ast.Tuple) and arg.elts else arg
            text = first.value if isinstance(first, ast.Constant) else None
            if isinstance(text, str) and text.split()[:1] == ["nvidia-smi"]:
                out.append(call.lineno)
                break
    return out


def _within(e: Evidence, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= e.line <= b for a, b in ranges)


def module_evidence(path: Path, target: str) -> ModuleEvidence:
    """What needs converting in the module ``path`` (cached per file version and target)."""
    try:
        st = path.stat()
    except OSError:
        return _NONE
    key = (str(path), st.st_size, st.st_mtime_ns, target, getattr(_depth, "value", 0))
    found = _cache.get(key)
    if found is None:
        found = _analyse(path, target)
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = found
    return found


def helper_evidence(helper: HelperTarget, target: str) -> tuple[Evidence, ...]:
    """What needs converting in ``helper`` (cached per file version and target)."""
    return module_evidence(helper.path, target).functions.get(helper.function, ())
