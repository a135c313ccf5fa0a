"""XLA118: a call into a function of another workspace module that needs converting there.

``utils.init_distributed_mode(args)``, ``model = smart_DDP(model)``, ``device, ids =
prepare_device(n_gpu)``: the CUDA-only setup runs in a helper of another file of the project
(NCCL, ``torch.cuda.set_device``, DDP ``device_ids``, a CUDA device picker), so nothing in the
script shows it and converting the script alone leaves it on CUDA. The helper's module is
found through the script's imports (``semantic/workspace_calls.py``: read from disk, never
imported or run), and the conversion rules run over it; the findings inside the called
function (and the functions of its module it calls) are named at the call, with no fix: the
fix belongs in that file. Each module's findings are cached by path, size and mtime, so the
editor pays for a module once.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..semantic.device_intent import hand_written_xla
from ..semantic.model import ScriptModel
from ..semantic.workspace import FunctionFacts
from ..semantic.workspace_calls import (
    HelperTarget,
    LibraryOrigin,
    helper_target,
    library_origin,
    parsed_module,
)
from .base import Category, Finding, Rule, RuleContext, Severity

CODE = "XLA118"
# Rules whose findings in a helper mean the helper must change for the script to run on XLA.
# Left out: performance advice, findings that depend on the calling script (the launcher,
# the optimizer step, loops and syncs), and informational ones.
EVIDENCE_CODES = frozenset(
    {
        "XLA101", "XLA102", "XLA103", "XLA108", "XLA110", "XLA111", "XLA115", "XLA116",
        "XLA202", "XLA203", "XLA205", "XLA403", "XLA405",
    }
)  # fmt: skip
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
# Functions of the helper's module it calls, followed this deep (setup -> get_dist_info).
CLOSURE_DEPTH = 2
# Distinct helper modules analysed for one script: the editor's cost stays bounded.
MAX_MODULES = 8
SHOWN = 3  # evidence lines named in the message; the rest are counted
# Which evidence the message names first: the setup that fails outright before env reads.
PRIORITY = ("XLA205", "XLA403", "XLA101", "XLA102", "XLA110", "XLA108", "XLA405", "XLA103")
_CACHE_LIMIT = 64
_IGNORE = re.compile(r"#\s*xla-lens:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")
DEVICE_NOTE = "it chooses the device there"
# Libraries whose autocast helpers know the XLA device (or that XLA102 reads itself).
XLA_AWARE = frozenset(
    {"torch", "torch_xla", "accelerate", "lightning", "pytorch_lightning", "lightning_fabric"}
)


@dataclass(frozen=True)
class Evidence:
    line: int  # 1-based, in the helper's file
    code: str
    what: str
    rank: int = 0  # which the message names first (lowest)


# (path, size, mtime, target) -> function name -> its evidence, in line order
_cache: dict[tuple[str, int, int, str], dict[str, tuple[Evidence, ...]]] = {}


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


def _analyse(path: Path, target: str) -> dict[str, tuple[Evidence, ...]]:
    """The evidence of each top-level function of the module ``path``."""
    from .registry import all_rules  # the registry imports every rule, this one too

    parsed = parsed_module(path)
    if parsed is None:
        return {}
    # "<sibling>": the rules follow no further imports from the helper's module.
    model = ScriptModel(parsed.source, parsed.tree, "<sibling>")
    if model.uses_torch_xla:
        return {}  # converted (or written for XLA) already: its own file's business
    ctx = RuleContext(target=target)  # type: ignore[arg-type]
    found: list[Finding] = []
    for rule in all_rules():
        if rule.code not in EVIDENCE_CODES:
            continue
        try:
            found.extend(rule.check(model, ctx))
        except Exception:  # noqa: BLE001  a rule broken on someone else's file says nothing
            continue
    calls_at = {(c.lineno, c.col_offset): model.call_name(c) for c in model.calls}
    evidence: dict[tuple[int, str], Evidence] = {}
    for f in found:
        if f.severity > Severity.WARNING or _silenced_in_file(model.lines, f):
            continue
        start = (f.span.start.line + 1, f.span.start.col)
        if f.code == "XLA403" and calls_at.get(start) not in CUDA_SETUP_CALLS:
            continue
        if f.code == "XLA405" and start not in calls_at:
            continue  # named, not run: ``bn_types = (nn.BatchNorm2d, nn.SyncBatchNorm)``
        # One per line and rule: ``'RANK' in os.environ and 'WORLD_SIZE' in os.environ``.
        rank = PRIORITY.index(f.code) if f.code in PRIORITY else len(PRIORITY)
        if calls_at.get(start) in DEVICE_QUERIES:
            rank = PRIORITY.index("XLA405")  # a count, not a setup that fails
        what = _short(f.message)
        evidence.setdefault((start[0], f.code), Evidence(start[0], f.code, what, rank))
    out = {}
    for name, fn in parsed.functions.items():
        ranges = [(r.lineno, r.end_lineno or r.lineno) for r in _closure(model, fn)]
        mine = tuple(
            e for _, e in sorted(evidence.items()) if any(a <= e.line <= b for a, b in ranges)
        )
        if any(e.code not in SUPPORTING for e in mine):
            out[name] = mine
    return out


def _closure(model: ScriptModel, fn: ast.AST) -> list[ast.AST]:
    """``fn`` and the functions of its module it calls, ``CLOSURE_DEPTH`` deep."""
    out, frontier = [fn], [fn]
    for _ in range(CLOSURE_DEPTH):
        found = []
        for region in frontier:
            for n in model.walk_scope(region):
                if isinstance(n, ast.Call):
                    callee = model.steps.callee(n)
                    if callee is not None and callee not in out and callee not in found:
                        found.append(callee)
        out.extend(found)
        frontier = found
    return out


def helper_evidence(helper: HelperTarget, target: str) -> tuple[Evidence, ...]:
    """What needs converting in ``helper`` (cached per file version and target)."""
    try:
        st = helper.path.stat()
    except OSError:
        return ()
    key = (str(helper.path), st.st_size, st.st_mtime_ns, target)
    per_function = _cache.get(key)
    if per_function is None:
        per_function = _analyse(helper.path, target)
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = per_function
    return per_function.get(helper.function, ())


def _reported_by_script_rules(
    model: ScriptModel, call: ast.Call, ctx: RuleContext, evidence: tuple[Evidence, ...]
) -> set[int]:
    """Lines of the helper that the script's own rules already name at this call (XLA101's
    picker of a sibling helper, XLA403's CUDA setup in one, XLA108's save helper): said
    once, by them."""
    from . import xla101_cuda_device as x101
    from . import xla108_xm_save as x108
    from .parts.checkpoint_helpers import helper_save_findings
    from .xla403_cuda_only_call import HELPER_EVIDENCE, HELPER_SETUP

    lines: set[int] = set()
    if isinstance(call.func, ast.Name):
        facts: FunctionFacts | None = model.steps.external(call)
        if facts is not None:
            if facts.cuda_picker_line and x101._gives_the_device(model, call):
                lines.add(facts.cuda_picker_line)
            if facts.nccl_line or any(q in HELPER_SETUP for q, _ in facts.cuda_calls):
                lines.update(line for q, line in facts.cuda_calls if q in HELPER_EVIDENCE)
                lines.add(facts.nccl_line)
    if any(e.code == "XLA108" for e in evidence):
        saves = model.memo(
            (CODE, "XLA108 helper saves", ctx.target),
            lambda: {
                id(f.span): f.span
                for f in helper_save_findings(model, ctx, "XLA108", x108._is_state_dict)
            },
        )
        if model.span(call) in saves.values():
            lines.update(e.line for e in evidence if e.code == "XLA108")
    return lines


def _display_path(script: str, module: Path) -> str:
    """``utils/util.py`` for a module beside or above the script, else the full path."""
    try:
        here = Path(script).resolve().parent
        target = module.resolve()
        for base in (here, *list(here.parents)[:3]):
            if target.is_relative_to(base):
                return target.relative_to(base).as_posix()
    except (ValueError, OSError):
        pass
    return str(module)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    # A script a person wrote for XLA (torch_xla API the fixes never write) is quiet. Importing
    # torch_xla is not enough: after ``fix`` the script imports it too, and its helpers still
    # need converting (the summary of what is left must say so).
    if hand_written_xla(model) or not model.path or model.path.startswith("<"):
        return
    seen: set[tuple[str, str]] = set()
    modules: set[str] = set()
    for call in model.calls:
        helper = helper_target(model, call)
        if helper is None:
            continue
        key = (str(helper.path), helper.function)
        if key in seen:
            continue  # the first call says it; the fix is in one place
        if str(helper.path) not in modules and len(modules) >= MAX_MODULES:
            continue
        modules.add(str(helper.path))
        seen.add(key)
        evidence = helper_evidence(helper, ctx.target)
        if not evidence:
            continue
        already = _reported_by_script_rules(model, call, ctx, evidence)
        evidence = tuple(e for e in evidence if e.line not in already)
        if any(e.code not in SUPPORTING for e in evidence):
            yield _finding(model, call, helper, evidence)
    yield from _library_autocasts(model)


def _library_autocasts(model: ScriptModel) -> Iterator[Finding]:
    """``with smart_amp_autocast(amp):`` where the name is a library's autocast helper
    (imported straight, or re-exported by a workspace module): its body is out of reach, and
    such helpers autocast on CUDA unless told otherwise. Said, with no fix."""
    for node in model.nodes_of(ast.With, ast.AsyncWith):
        for item in node.items:  # type: ignore[attr-defined]
            call = item.context_expr
            if not isinstance(call, ast.Call):
                continue
            origin = library_origin(model, call)
            if origin is None or "autocast" not in origin.name.lower():
                continue
            if origin.module.split(".")[0] in XLA_AWARE:
                continue
            yield _library_finding(model, call, origin)


def _library_finding(model: ScriptModel, call: ast.Call, origin: LibraryOrigin) -> Finding:
    shown = call.func.id if isinstance(call.func, ast.Name) else origin.name
    source = f"`{origin.module}.{origin.name}`"
    if origin.via is not None:
        source += f", re-exported by {_display_path(model.path, origin.via)}"
    message = (
        f"{shown}() is {source}: an autocast helper outside the files xla-lens can read; such "
        "helpers usually autocast on CUDA unless given the device type, a silent no-op on XLA "
        "tensors (the step then runs in full precision)"
    )
    manual = (
        "Check which device type it autocasts; on XLA use "
        '`torch.autocast("xla", dtype=torch.bfloat16)` (or pass the helper the XLA device type).'
    )
    return Finding(CODE, message, model.span(call), Severity.WARNING, manual=manual)


def _finding(
    model: ScriptModel, call: ast.Call, helper: HelperTarget, evidence: tuple[Evidence, ...]
) -> Finding:
    where = _display_path(model.path, helper.path)
    first = sorted(evidence, key=lambda e: (e.rank, e.line))[:SHOWN]
    first.sort(key=lambda e: e.line)
    shown = "; ".join(f"line {e.line}: {e.what} ({e.code})" for e in first)
    more = f"; and {len(evidence) - SHOWN} more there" if len(evidence) > SHOWN else ""
    device = f"; {DEVICE_NOTE}" if any(e.code == "XLA101" for e in evidence) else ""
    defined = "" if helper.function == helper.shown.rsplit(".", 1)[-1] else f" ({helper.function})"
    message = (
        f"{helper.shown}(){defined} runs code in {where} that needs converting for XLA: "
        f"{shown}{more}{device}"
    )
    manual = (
        f"Convert {where} itself (`xla-lens check {where}` lists each site with its fix): "
        "the change belongs in that file, not at this call."
    )
    return Finding(CODE, message, model.span(call), Severity.WARNING, manual=manual)


def leaves_device_by_hand(f: Finding) -> bool:
    """An XLA118 finding whose helper chooses the device: until that file is converted the
    script's device is not the XLA device (the conversion summary says to check it)."""
    return f.code == CODE and DEVICE_NOTE in f.message


HOVER = """\
**XLA118 · workspace helper needs converting**

The called function lives in another file of the project and does CUDA-only setup there
(NCCL, `torch.cuda.set_device`, DDP `device_ids`, a CUDA device picker, ...). Convert that
file too: `xla-lens check path/to/helper.py`.
"""

RULE = Rule(
    code=CODE,
    name="workspace-helper",
    category=Category.CONVERSION,
    summary="a call into a helper of another workspace module whose body needs converting "
    "(NCCL, set_device, DDP device_ids, a CUDA picker) → named at the call, converted in its file",
    severity=Severity.WARNING,
    check=check,
    has_fix=False,
    hover={},
)
