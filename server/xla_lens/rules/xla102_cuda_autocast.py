"""XLA102: a CUDA autocast context, which does nothing for XLA tensors."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import replace

from ..semantic.line_refs import line_refs
from ..semantic.model import Emitter, ScriptModel, arg_or_keyword, is_cuda_string, keyword
from ..semantic.precision import ACCELERATORS, device_strings
from ..semantic.prepared_loaders import is_accelerator
from ..semantic.xla_branches import regions
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity, Target
from .parts.autocast_device_type import derivation_findings
from .parts.bf16_host_copies import bf16_host_copy_reason
from .parts.device_after_fixes import device_not_xla
from .parts.device_from_caller import device_from_caller
from .parts.device_held import device_held
from .parts.sibling_fp32_islands import fp32_islands, islands_reason
from .parts.unused_amp_imports import unused_amp_imports

CODE = "XLA102"

# torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)
CUDA_AUTOCAST = {"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"}
CUDA_PARAMS = ("enabled", "dtype", "cache_enabled")
# torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)
DEVICE_AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}
DEVICE_PARAMS = ("device_type", "dtype", "enabled", "cache_enabled")

MESSAGE = (
    "CUDA autocast is a silent no-op on XLA tensors: the ops inside it stay fp32. "
    "Use an XLA autocast ({target})"
)


def _is_cuda_autocast(
    model: ScriptModel, call: ast.Call, target: Target
) -> tuple[bool, tuple[str, ...], str | None]:
    """(found, parameter names, why the fix needs review or None)."""
    name = model.call_name(call)
    if name in CUDA_AUTOCAST:
        return True, CUDA_PARAMS, _with_autocast_off(device_held(model, target))
    if name not in DEVICE_AUTOCAST:
        return False, (), None
    device = arg_or_keyword(call, 0, "device_type")
    if device is None:
        return False, (), None
    if is_cuda_string(device):
        return True, DEVICE_PARAMS, _with_autocast_off(device_held(model, target))
    if isinstance(device, ast.Constant):
        return False, (), None
    # ``device_type=device_type`` / ``device.type``: follow it to the strings it can be.
    values = device_strings(model, device)
    if values is not None:
        if values == {"cuda"}:
            # The script can only run on the accelerator; "xla" is right once that device
            # is the XLA device.
            return True, DEVICE_PARAMS, _device_stays(model, device, call, target)
        if "cuda" in values and values <= ACCELERATORS:
            # A picker with a CPU/MPS fallback: "xla" is right only once the picker itself
            # is converted (XLA101); left on the CPU, "xla" would switch autocast off.
            shown = ", ".join(sorted(values))
            return (
                True,
                DEVICE_PARAMS,
                f'`{model.segment(device)}` can be {shown}: "xla" is right once the '
                "script's device picker is the XLA device (XLA101); on the CPU it would turn "
                "autocast off",
            )
        return False, (), None
    if model.uses_torch_xla or not _names_a_device(device):
        return False, (), None
    if _accelerate_device_type(model, device):
        return False, (), None
    if not _enables(call):
        # ``with torch.autocast(self.device.type, enabled=False):`` around a float32 loss
        # (BERT-MFT's evaluation, held-out 160's control): autocast off on whatever device
        # the model is on, the XLA device included. Nothing to convert.
        return False, (), None
    reason = (
        f"the device type comes from `{model.segment(device)}`, which xla-lens cannot "
        'follow: "xla" is right once the script\'s device is the XLA device'
    )
    return True, DEVICE_PARAMS, reason


def _accelerate_device_type(model: ScriptModel, device: ast.AST) -> bool:
    """``accelerator.device.type`` (diffusers' examples, held-out 37): accelerate's own device,
    the XLA device when accelerate runs on XLA, so the autocast already follows it."""
    return (
        isinstance(device, ast.Attribute)
        and device.attr == "type"
        and isinstance(device.value, ast.Attribute)
        and device.value.attr == "device"
        and is_accelerator(model, device.value.value)
    )


def _cuda_literal(model: ScriptModel, call: ast.Call) -> bool:
    """``torch.autocast("cuda")``: the device type is written here, not followed."""
    device = arg_or_keyword(call, 0, "device_type")
    return device is not None and is_cuda_string(device)


def _with_autocast_off(held: str | None) -> str | None:
    if held is None:
        return None
    return f"{held}: with them still on CUDA the XLA autocast would switch the CUDA autocast off"


def _device_stays(
    model: ScriptModel, device_type: ast.AST, call: ast.Call, target: Target
) -> str | None:
    """Why ``device.type`` may still be CUDA after the safe fixes (None when the device
    becomes the XLA device): a CUDA autocast made "xla" while the tensors stay on CUDA
    would silently switch the original's mixed precision off."""
    if not (
        isinstance(device_type, ast.Attribute)
        and device_type.attr == "type"
        and isinstance(device_type.value, ast.Name)
    ):
        return None
    name = device_type.value.id
    why = device_not_xla(model, target, name, call)
    if not why:
        return None
    return (
        f'"xla" is right once `{name}` is the XLA device, but {why}: with `{name}` still '
        "CUDA the autocast would be switched off"
    )


_DEVICE_CHOICE = re.compile(r"\.type\b|device")


def _dtype_choice(model: ScriptModel, call: ast.Call, given: str) -> str:
    """The text that chooses the autocast's dtype: the argument, or for a name bound once to
    a conditional the conditional (held-out 154's esm2 classifier: ``dtype = torch.bfloat16 if
    "cuda" in args.device and is_bf16_supported() else torch.float32``, float32 on the XLA
    device, where an "xla" autocast of float32 turns itself off)."""
    kw = keyword(call, "dtype")
    node = kw.value if kw is not None else None
    if isinstance(node, ast.Name):
        values = model.assigned_from(node.id)
        if len(values) == 1 and isinstance(values[0], ast.IfExp):
            return " ".join(model.segment(values[0]).split())  # one line in the message
    return given


def _xla_gate(model: ScriptModel, call: ast.Call) -> str | None:
    """``enabled=device.type == "cuda"`` (held-out 137's distillation script) with every
    ``"cuda"`` a device is compared with read as ``"xla"``: kept as written, the gate is False on
    the converted device and the autocast the fix writes never turns on (the run trains in
    fp32). The comparison keeps its meaning, "on the accelerator", as the device goes from
    CUDA to XLA. None when the gate compares no device with "cuda"."""
    gate = next((k.value for k in call.keywords if k.arg == "enabled"), None)
    if gate is None:
        return None
    text = model.segment(gate)
    if not text.isascii():
        return None  # offsets below are columns of this one ASCII line
    start = model.span(gate).start
    edits: list[tuple[int, int]] = []
    for node in ast.walk(gate):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(_names_a_device(x) for x in sides if not _is_cuda_text(x)):
            continue
        for side in sides:
            if _is_cuda_text(side) and side.lineno == gate.lineno:  # type: ignore[attr-defined]
                begin = model.span(side).start.col - start.col
                end = model.span(side).end.col - start.col
                edits.append((begin, end))
    if not edits or "\n" in text:
        return None
    for begin, end in sorted(edits, reverse=True):
        quote = text[begin]
        text = f"{text[:begin]}{quote}xla{quote}{text[end:]}"
    return text


def _is_cuda_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "cuda"


def _names_a_device(node: ast.AST) -> bool:
    text = ast.unparse(node).lower()
    return "device" in text or text.endswith(".type")


def _arguments(
    model: ScriptModel, call: ast.Call, params: tuple[str, ...]
) -> dict[str, str] | None:
    """Parameter name -> source text, positional arguments mapped to their names;
    None when ``*args``/``**kwargs`` hide which parameter is which."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        kw.arg is None for kw in call.keywords
    ):
        return None
    if len(call.args) > len(params):
        return None
    out = {params[i]: model.segment(a) for i, a in enumerate(call.args)}
    for kw in call.keywords:
        out[kw.arg] = model.segment(kw.value)  # type: ignore[index]
    return out


def _modern(model: ScriptModel, call: ast.Call, args: dict[str, str]) -> Fix:
    e = Emitter(model)
    torch = e.torch
    # bf16 is the XLA autocast type (TPU/Neuron have no fast fp16); an explicit
    # dtype is the user's choice and stays.
    parts = ['"xla"', f"dtype={args.get('dtype', f'{torch}.bfloat16')}"]
    parts += [f"{k}={v}" for k, v in args.items() if k not in {"device_type", "dtype"}]
    code = f"{torch}.autocast({', '.join(parts)})"
    return Fix(f"Replace with {code}", (Replace(model.span(call), code), *e.imports))


def _legacy(model: ScriptModel, call: ast.Call, args: dict[str, str], cuda_form: bool) -> Fix:
    e = Emitter(model)
    amp = e.module("torch_xla.amp")
    if cuda_form:
        # Same signature as torch.cuda.amp.autocast: keep the arguments as written.
        op = Replace(model.span(call.func), f"{amp}.autocast")
        title = f"Use {amp}.autocast"
    else:
        kept = ", ".join(f"{k}={v}" for k, v in args.items() if k != "device_type")
        code = f"{amp}.autocast({kept})"
        op = Replace(model.span(call), code)
        title = f"Replace with {code}"
    return Fix(title, (op, *e.imports))


def _enables(call: ast.Call) -> bool:
    """The autocast turns mixed precision on (not ``autocast(enabled=False)`` itself)."""
    for kw in call.keywords:
        if kw.arg == "enabled" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
            return False
    return not (
        call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value is False
    )


def _target_api(target: Target) -> str:
    if target == "legacy":
        return "torch_xla.amp.autocast"
    return 'torch.autocast("xla", dtype=torch.bfloat16)'


def _never_entered(model: ScriptModel, call: ast.Call) -> bool:
    """``with torch.autocast("cuda") and (ctx):``: an ``and`` evaluates to its last operand, so
    the with statement enters ``ctx`` alone and the autocast never runs, on CUDA either
    (tcapelle's DDPM, held-out 45): nothing for XLA to change, and a finding would promise
    mixed precision the script never had."""
    parent = model.parent(call)
    return (
        isinstance(parent, ast.BoolOp)
        and isinstance(parent.op, ast.And)
        and parent.values[-1] is not call
        and isinstance(model.parent(parent), ast.withitem)
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    # XLA103 asks for these findings again (``final_fixes``): computed once per parse.
    return iter(model.memo((CODE, ctx.target), lambda: list(_check(model, ctx))))


def _check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    # Only autocast calls can be one (``_is_cuda_autocast`` looks at nothing else).
    for call in model.calls_to(*CUDA_AUTOCAST, *DEVICE_AUTOCAST):
        if _never_entered(model, call):
            continue
        found, params, review = _is_cuda_autocast(model, call, ctx.target)
        if not found:
            continue
        args = _arguments(model, call, params)
        fix = manual = None
        dtype_review = None
        if args is None:
            manual = (
                f"Replace this autocast with {_target_api(ctx.target)}, passing the "
                "arguments hidden in *args/**kwargs by name"
            )
        elif ctx.target == "legacy":
            fix = _legacy(model, call, args, params == CUDA_PARAMS)
        else:
            chosen = _dtype_choice(model, call, args.get("dtype", ""))
            if _DEVICE_CHOICE.search(chosen):
                # ``dtype=torch.bfloat16 if device.type in ['cuda', 'cpu'] else torch.float16``
                # (nanoVLM, held-out 36): on the XLA device that choice gives float16.
                args = {**args, "dtype": f"{Emitter(model).torch}.bfloat16"}
                dtype_review = (
                    f"the dtype was chosen from the device (`{chosen[:60]}`), a choice that "
                    'reads differently on the XLA device (its type is "xla"); the fix uses '
                    "bfloat16, XLA's autocast type"
                )
            gate = _xla_gate(model, call)
            if gate is not None:
                args = {**args, "enabled": gate}
            fix = _modern(model, call, args)
        if review is None and (params == CUDA_PARAMS or _cuda_literal(model, call)):
            # The device is the caller's: "xla" is right only under an XLA caller.
            review = device_from_caller(model, ctx.target) or review
        if dtype_review is not None:
            review = f"{dtype_review}; {review}" if review else dtype_review
        if (
            fix is not None
            and "bfloat16" in fix.title + "".join(getattr(op, "code", "") for op in fix.ops)
            and (host := bf16_host_copy_reason(model, call))
        ):
            review = f"{host}; {review}" if review else host
        if fix is not None and _enables(call) and (islands := fp32_islands(model)):
            island_review = islands_reason(model, islands)
            review = f"{island_review}; {review}" if review else island_review
        if fix is not None and review is not None:
            fix = replace(fix, safe=False, review_reason=review)
            manual = f"review: {review}"
        message = MESSAGE.format(target=_target_api(ctx.target))
        kept = (args or {}).get("dtype", "")
        if fix is not None and kept.endswith("float32"):
            # Held-out 156's video VAE: ``autocast(dtype=torch.float32)`` asked for no half
            # type; the message named bfloat16 while the fix kept float32.
            message += (
                "; this one asks for float32: its ops ran in float32 on CUDA, and XLA's "
                "autocast refuses float32 (it warns and turns itself off, torch 2.9), so the "
                "fix keeps it as it is: float32 either way, no mixed precision"
            )
        elif fix is not None and "float16" in kept and "bfloat16" not in kept:
            # Held-out 42 (MedSAM): the message named bfloat16 while the fix kept float16.
            message += (
                "; the fix keeps the script's float16 (bfloat16, XLA's native half type, "
                "needs no loss scaling)"
            )
        yield Finding(CODE, message, model.span(call), Severity.WARNING, fix=fix, manual=manual)
    yield from _references(model, ctx)
    yield from derivation_findings(model, ctx)
    yield from _module_imports(model)
    yield from unused_amp_imports(model, CODE)


AMP_MODULE = "torch.cuda.amp"
# What a use through the alias is, and the rule that reports it.
_USE_KINDS = {"autocast": ("a CUDA autocast", CODE), "GradScaler": ("a CUDA GradScaler", "XLA103")}


def _amp_alias(imp: ast.Import | ast.ImportFrom, alias: ast.alias) -> str | None:
    """The local name that ``import torch.cuda.amp as amp`` / ``from torch.cuda import amp``
    binds to the CUDA AMP module; None for other imports (``import torch.cuda.amp`` binds
    ``torch``, whose uses are reported where they are called)."""
    if isinstance(imp, ast.Import):
        return alias.asname if alias.name == AMP_MODULE else None
    if imp.level == 0 and imp.module == "torch.cuda" and alias.name == "amp":
        return alias.asname or alias.name
    return None


def _module_imports(model: ScriptModel) -> Iterator[Finding]:
    """``import torch.cuda.amp as amp``: the import line is where the script chooses CUDA's
    AMP. Its uses (``amp.autocast(...)``, ``amp.GradScaler()``) are converted where they
    are; the import is then unused, and harmless until then, so it gets no fix: removing
    it before every use is converted would break the script."""
    yield from _name_imports(model)
    for imp in model.import_nodes:
        for alias in imp.names:
            local = _amp_alias(imp, alias)
            if local is None:
                continue
            uses: dict[str, list[int]] = {}
            for node in model.nodes_of(ast.Attribute):
                if not (isinstance(node.value, ast.Name) and node.value.id == local):
                    continue
                if model.qualname(node) != f"{AMP_MODULE}.{node.attr}":
                    continue  # the name was rebound to something else
                if regions(model).not_xla_at(model.span(node)) is not None:
                    continue  # the CUDA side of the script's own XLA switch keeps its AMP
                uses.setdefault(node.attr, []).append(node.lineno)
            if not uses:
                continue
            parts = []
            for name, lines in sorted(uses.items(), key=lambda u: min(u[1])):
                kind, rule = _USE_KINDS.get(name, (f"torch.cuda.amp.{name}", None))
                at = line_refs(sorted(set(lines)))
                parts.append(f"{kind} (line {at}{f', {rule}' if rule else ''})")
            described = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
            yield Finding(
                CODE,
                f"`{model.segment(imp)}` imports CUDA's AMP module (deprecated in PyTorch for "
                f"torch.amp): through `{local}` the script uses {described}, which "
                f"{'does' if sum(map(len, uses.values())) == 1 else 'do'} not carry over to XLA",
                model.span(imp),
                Severity.INFORMATION,
                manual=f"Convert each use of `{local}.` (reported at its line), then remove "
                "this import: it is unused once they are converted",
            )


def _name_imports(model: ScriptModel) -> Iterator[Finding]:
    """``from torch.cuda.amp import autocast, GradScaler`` (held-out 163's table-recognition
    script): the import line chooses CUDA's AMP as the module import does; each use is
    reported where it is, and the fixes drop the names they leave unused."""
    for imp in model.import_nodes:
        if not (isinstance(imp, ast.ImportFrom) and imp.level == 0 and imp.module == AMP_MODULE):
            continue
        parts = []
        for alias in imp.names:
            if alias.name not in _USE_KINDS:
                continue
            local = alias.asname or alias.name
            lines = sorted(
                {
                    n.lineno
                    for n in model.name_nodes(local)
                    if isinstance(n.ctx, ast.Load)
                    and model.qualname(n) == f"{AMP_MODULE}.{alias.name}"
                    and regions(model).not_xla_at(model.span(n)) is None
                }
            )
            if lines:
                kind, rule = _USE_KINDS[alias.name]
                parts.append(f"{kind} (`{local}`, line {line_refs(lines)}, {rule})")
        if not parts:
            continue
        described = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        yield Finding(
            CODE,
            f"`{model.segment(imp)}` imports from CUDA's AMP module (deprecated in PyTorch for "
            f"torch.amp): the script uses {described}, which do not carry over to XLA",
            model.span(imp),
            Severity.INFORMATION,
            manual="Convert each use (reported at its line); the fixes then drop the names "
            "they leave unused",
        )


def _references(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    """``autocast = torch.cuda.amp.autocast if fp16 else nullcontext``: the CUDA autocast
    passed around uncalled is called elsewhere with its own arguments; no local rewrite."""
    for node in model.nodes_of(ast.Attribute):
        if model.qualname(node) not in CUDA_AUTOCAST:
            continue
        parent = model.parent(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            continue
        if isinstance(parent, ast.Attribute):
            continue
        yield Finding(
            CODE,
            MESSAGE.format(target=_target_api(ctx.target)),
            model.span(node),
            Severity.WARNING,
            manual=f"where this autocast is called, use {_target_api(ctx.target)} instead",
        )


HOVER = """\
**XLA102 · CUDA autocast → XLA autocast**

A CUDA autocast (`torch.cuda.amp.autocast()`, `torch.autocast("cuda")`) is a **silent no-op**
on XLA tensors: nothing is cast and the step runs in fp32.

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `torch.autocast("xla", dtype=torch.bfloat16)` |
| legacy (1.13, SageMaker Training Compiler) | `torch_xla.amp.autocast(...)` (same arguments as `torch.cuda.amp.autocast`) |

Also found when the device type is a variable that can be `"cuda"`:
`torch.autocast(device_type=device_type)` with `device_type = "cuda" if ... else "cpu"`,
`torch.autocast(device.type)` with `device = torch.device("cuda" if ... else "cpu")`, an
argparse default. On XLA a `"cuda"` or `"cpu"` autocast casts nothing, so the fix names
`"xla"`: applied automatically when the value can only be `"cuda"`, marked for review when
it has a CPU/MPS fallback (right only once the picker itself becomes the XLA device, XLA101)
or comes from where xla-lens cannot follow (a function parameter). `device.type` of a
converted device is already `"xla"`. The line that derives the type by looking for `"cuda"`
in the device (`device_type = "cuda" if "cuda" in device else "cpu"`) is reported too when it
reaches an autocast: on XLA it gives `"cpu"`, and the fix adds an `"xla"` case.

Fix: the autocast call is replaced; `enabled=`, an explicit `dtype=` and `cache_enabled=`
are kept. `torch_xla.amp.autocast(device)` in torch_xla 2.9 raises on the CPU device
("AMP only supported for XLA:TPU"), so the modern fix uses `torch.autocast("xla")`.
With bf16 no loss scaling is needed (see XLA103).
"""

RULE = Rule(
    code=CODE,
    name="cuda-autocast",
    category=Category.CONVERSION,
    summary='CUDA autocast (torch.cuda.amp.autocast, torch.autocast("cuda")) is a no-op on XLA → XLA autocast',
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.cuda.amp.autocast": HOVER,
        "torch.autocast": HOVER,
        "torch.amp.autocast": HOVER,
    },
)
