"""XLA101's device arguments that are neither ``.to(...)`` nor ``device=`` on a torch call:

- ``torch.Generator(device="cuda")``: XLA has no generator ("XLA device type not an
  accelerator"), so the fix makes it a CPU generator, which draws on the XLA device accept
  (``semantic.device_refusals``);
- ``torch.set_default_device("cuda")``: every new tensor lands on CUDA;
- ``evaluate(model, loader, device=rank)``: an integer CUDA index handed to this script's own
  function as the device it moves batches to, reported at the argument like ``.to(rank)``.
"""

from __future__ import annotations

import ast
import builtins
import sys
from collections.abc import Iterator

from ...semantic import calls, pickers, xla_api
from ...semantic import device_refusals as refusals
from ...semantic import device_sites as sites
from ...semantic import picker_fixes as pf
from ...semantic.advice import Advice
from ...semantic.edits import Replace
from ...semantic.model import Emitter, ScriptModel, is_cuda_string, method_name
from ...semantic.params import parameter_of
from ...semantic.xla_api import Target


def generator_advice(model: ScriptModel, handled: set[int]) -> Iterator[Advice]:
    """Runs before the picker passes: a picker written inside ``torch.Generator(...)`` is
    rewritten to the CPU here, not to the XLA device there."""
    for call in model.calls:
        arg = refusals.device_argument(model, call)
        if arg is None or id(arg) in handled or not _names_cuda(model, arg):
            continue
        handled.update(id(n) for n in ast.walk(arg))
        op, reason = refusals.cpu_generator(model, call, arg)
        safe = not reason
        yield pf.advice(
            model,
            arg,
            pf.message(
                f"this generator is made on a CUDA device ({model.segment(arg)}), and XLA has "
                "none (torch.Generator(device=torch_xla.device()) raises): a CPU generator "
                "works for draws on the XLA device (drawn on the CPU, then moved; its numbers "
                "differ from CUDA's, as every CUDA random stream does on XLA)",
                safe,
                reason,
            ),
            pf.fix_plan("Use a CPU generator", (op,), Emitter(model), safe, reason),
        )


def inherited_generator_advice(
    model: ScriptModel, advice: list[Advice], handled: set[int]
) -> Iterator[Advice]:
    """``torch.Generator(device=pipeline.device)`` / ``device=accelerator.device``: a device the
    script takes from an object (accelerate, a pipeline, a model), which is the XLA device on an
    XLA host, where the generator then raises. Asked after every other finding: a generator
    whose device a device fix already rewrites (``picker_fixes``) is not said twice. Review:
    on a CUDA host the script would draw from a CPU generator too (other numbers)."""
    covered = {
        op.span for a in advice if a.fix is not None for op in a.fix.ops if isinstance(op, Replace)
    }
    for call in model.calls:
        arg = refusals.device_argument(model, call)
        if arg is None or id(arg) in handled or model.span(arg) in covered:
            continue
        if not _inherited_device(model, arg):
            continue
        handled.add(id(arg))
        op, why = refusals.cpu_generator(model, call, arg)
        reason = "; ".join(
            r
            for r in (
                "the generator is a CPU one on every host then, also on a CUDA host (other "
                "random numbers there)",
                why,
            )
            if r
        )
        shown = model.segment(arg)
        yield pf.advice(
            model,
            arg,
            pf.message(
                f"torch.Generator(device={shown}) raises when {shown} is the XLA device (XLA "
                "has no generator of its own): a CPU generator works for draws on the XLA "
                "device (drawn on the CPU, then moved)",
                False,
                reason,
            ),
            pf.fix_plan("Use a CPU generator", (op,), Emitter(model), False, reason),
        )


def _inherited_device(model: ScriptModel, arg: ast.AST) -> bool:
    """``x.device``, a name bound only to ``x.device`` values, or a device parameter."""
    if isinstance(arg, ast.Attribute):
        return arg.attr == "device"
    if not isinstance(arg, ast.Name):
        return False
    if sites.is_device_name(arg) and parameter_of(model, arg) is not None:
        # ``Trainer.__init__(self, ..., device)`` building ``torch.Generator(device)``
        # (held-out 61's ddpm-torch): the caller's device, the XLA one once converted.
        return True
    bound = [
        a.value
        for a in model.assignments.get(arg.id, ())
        if isinstance(a, ast.Assign) and a.value is not None
    ]
    return bool(bound) and all(isinstance(v, ast.Attribute) and v.attr == "device" for v in bound)


def _names_cuda(model: ScriptModel, arg: ast.AST) -> bool:
    if is_cuda_string(arg) or pickers.is_accelerator_value(model, arg):
        return True
    if isinstance(arg, ast.IfExp):
        return pickers.picker(model, arg) is not None
    return (
        isinstance(arg, ast.Call)
        and model.call_name(arg) == "torch.device"
        and pickers.is_device_value(model, arg)
    )


def default_device_advice(
    model: ScriptModel, target: Target, call: ast.Call, handled: set[int]
) -> Advice | None:
    """``torch.set_default_device("cuda")``: new tensors land on CUDA."""
    if model.call_name(call) != "torch.set_default_device" or not call.args:
        return None
    arg = call.args[0]
    if id(arg) in handled or not is_cuda_string(arg):
        return None
    handled.add(id(arg))
    e = Emitter(model)
    dev = sites.device_ref_at(model, call) or xla_api.device(e, target)
    return pf.advice(
        model,
        arg,
        f"torch.set_default_device({model.segment(arg)}) makes new tensors land on a CUDA "
        f"device: use torch.set_default_device({dev})",
        pf.fix_plan(f"Default to {dev}", (Replace(model.span(arg), dev),), e, True, ""),
    )


def int_argument_advice(
    model: ScriptModel, target: Target, call: ast.Call, handled: set[int]
) -> Iterator[Advice]:
    """``evaluate(model, loader, device=rank)`` where ``evaluate`` moves tensors with its
    ``device`` parameter: the CUDA index becomes the device, as ``.to(rank)`` does; the fix
    waits for review when another use of the parameter needs the number."""
    given = [
        (index, kw, arg)
        for index, kw, arg in [(i, None, a) for i, a in enumerate(call.args)]
        + [(None, k.arg, k.value) for k in call.keywords if k.arg]
        if id(arg) not in handled
        and (sites.rank_index(arg) or sites.is_int_cuda_device(model, arg))
    ]
    # The cheap test first: few calls pass a CUDA index at all.
    found = calls.callee(model, call) if given else None
    if found is None:
        return
    fn, bound = found
    for index, kw, arg in given:
        param = calls.parameter_for(fn, bound, index, kw)
        # A parameter named like an index (``train(rank)`` moving with ``.to(rank)``) is
        # reported inside the function, where the move is.
        if param is None or sites.rank_index(ast.Name(param)) or not _moves_with(model, fn, param):
            continue
        handled.add(id(arg))
        e = Emitter(model)
        var = sites.device_ref_at(model, call)
        dev = var or xla_api.device(e, target)
        reasons = (
            [] if var else ["no device variable is bound here; check the index is the CUDA device"]
        )
        flow = sites.device_flow(model)
        bad = [u for u in flow.uses_of_name(param, fn) if not u.ok]
        if bad:
            reasons.append(
                f"{fn.name}() also uses {param} where the number matters: {flow.describe(bad)}"
            )
        reason = "; ".join(reasons)
        shown = model.segment(arg)
        yield pf.advice(
            model,
            arg,
            pf.message(
                f"{fn.name}() moves tensors to its {param} parameter, and {shown} is a CUDA "
                f"device number: pass {dev}",
                not reason,
                reason,
            ),
            pf.fix_plan(
                f"Pass {dev} instead", (Replace(model.span(arg), dev),), e, not reason, reason
            ),
        )


def _moves_with(model: ScriptModel, fn: ast.AST, param: str, depth: int = 2) -> bool:
    """``param`` is a device inside ``fn``: ``x.to(param)``, ``device=param``, ``.cuda(param)``,
    or handed on to a function of the script that uses it so (the annotated transformer's
    ``create_dataloaders(gpu, ...)`` gives it to ``collate_batch``, which builds
    ``torch.tensor([0], device=device)``: held-out 27)."""
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == param):
            continue
        p = model.parent(node)
        if isinstance(p, ast.keyword) and p.arg == "device":
            return True
        if isinstance(p, ast.Call) and method_name(p) in {"to", "cuda"} and node in p.args:
            return True
        if depth <= 0:
            continue
        call, index, kw = (
            (model.parent(p), None, p.arg) if isinstance(p, ast.keyword) else (p, None, None)
        )
        if isinstance(call, ast.Call) and kw is None and node in call.args:
            index = call.args.index(node)
        if not isinstance(call, ast.Call) or (index is None and kw is None):
            continue
        found = calls.callee(model, call)
        if found is None or found[0] is fn:
            continue
        inner = calls.parameter_for(found[0], found[1], index, kw)
        if inner is not None and _moves_with(model, found[0], inner, depth - 1):
            return True
    return False


# Builtins whose "cuda" argument is text, not a device (the standard library's functions are
# left out by module, methods of objects by their form).
_TEXT_CALLS = frozenset(dir(builtins))


def _device_callee(model: ScriptModel, call: ast.Call) -> str | None:
    """The name of a function that may take a device positionally: one of the script's, or
    one of an imported module (``fid_score.calculate_fid_given_paths``); None for methods of
    objects (``s.startswith("cuda")``, ``log.info("cuda")``) and builtins."""
    func = call.func
    if isinstance(func, ast.Name):
        imported = model.imports.get(func.id)
        if func.id in _TEXT_CALLS or (imported is not None and _not_a_library(imported)):
            return None
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        module = model.imports.get(func.value.id)
        if module is None or _not_a_library(module):
            return None
        return f"{func.value.id}.{func.attr}"
    return None


def _not_a_library(qualname: str) -> bool:
    """torch's own calls (their device arguments are the other passes' business) and the
    standard library's (``warnings.warn("cuda ...")``)."""
    top = qualname.split(".")[0]
    return top in ("torch", "torch_xla") or top in sys.stdlib_module_names


def positional_string_advice(
    model: ScriptModel, target: Target, call: ast.Call, handled: set[int]
) -> Iterator[Advice]:
    """``calculate_fid_given_paths(paths, 128, "cuda", 2048)`` (pi-GAN's FID helper, held-out
    35), ``build_feature_extractor("clean", "cuda")``, ``evaluate(model, "cuda")``: a CUDA
    device handed over positionally. The XLA device is offered for review: a library may
    compare the string with "cuda" or call torch.cuda itself, and a function of the script
    may use the value for more than placing tensors."""
    strings = [a for a in call.args if id(a) not in handled and is_cuda_string(a)]
    if not strings:
        return
    name = _device_callee(model, call)
    if name is None:
        return
    own = calls.callee(model, call) is not None
    reason = (
        f"check that `{name}()` uses the value only as a device"
        if own
        else f"`{name}` is not this script's: check it takes any torch device (it may compare "
        'the string with "cuda" or call torch.cuda itself)'
    )
    for arg in strings:
        handled.add(id(arg))
        e = Emitter(model)
        dev = xla_api.device(e, target)
        yield pf.advice(
            model,
            arg,
            pf.message(
                f"{model.segment(arg)} hands `{name}()` a CUDA device: on XLA pass {dev}",
                False,
                reason,
            ),
            pf.fix_plan(f"Pass {dev} instead", (Replace(model.span(arg), dev),), e, False, reason),
        )
