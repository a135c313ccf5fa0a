"""XLA116: ``torch.manual_seed`` does not seed the XLA device.

``torch.manual_seed(s)`` seeds the CPU generator and every CUDA device, so in the original
script the seed decides the device's random numbers too (dropout masks, ``torch.randn(...,
device=device)``). The XLA device has a generator of its own that only ``torch_xla.manual_seed``
(legacy: ``xm.set_rng_state``) sets (verified on torch_xla 2.9: two ``torch.manual_seed(0)``
calls are followed by different ``torch.randn(3, device=xla)`` draws). After conversion every
run draws the same device stream whatever ``--seed`` says, re-seeding does not restart it,
and per-rank seeds no longer differ on the device.

The fix seeds the XLA device right after, from the seed torch just took. It is safe: the
random values on XLA never matched the CPU's or CUDA's for a seed anyway (each has its own
generator), so what the original promises is "this seed decides the device's draws", which
the fix keeps and the unfixed conversion loses. ``torch_xla.manual_seed`` rejects negative
seeds that ``torch.manual_seed`` takes, so a seed that is not a non-negative literal is passed
as ``torch.initial_seed()`` (the value torch stored: the same number for any seed >= 0).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.device_intent import being_converted, runs_on_cuda
from ..semantic.frameworks import ownership
from ..semantic.launch import (
    is_launched,
    launch_targets,
    parent_functions,
    replica_functions,
    runs_in_parent,
)
from ..semantic.line_refs import line_ref
from ..semantic.model import Emitter, ScriptModel, arg_or_keyword
from ..semantic.node_helpers import is_main_guard
from .base import Category, Finding, Fix, InsertAfter, Rule, RuleContext, Severity
from .xla204_mp_fn import guard_entry

# ``runs_on_cuda`` lives in semantic/device_intent.py; XLA115 still imports it from here.
__all__ = ["RULE", "check", "runs_on_cuda"]

CODE = "XLA116"
TORCH_SEEDS = frozenset({"torch.manual_seed", "torch.random.manual_seed"})
# Calls that already seed the XLA device, or that XLA403 turns into torch_xla.manual_seed
# (torch.cuda seeds), or library helpers that seed every device torch knows, XLA included.
SEEDS_XLA = frozenset(
    {
        "torch_xla.manual_seed",
        "torch_xla.core.xla_model.set_rng_state",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "transformers.set_seed",
        "transformers.trainer_utils.set_seed",
        "accelerate.utils.set_seed",
    }
)
PARENT_REVIEW = (
    "this seed may run in the launcher's parent process (line {line}), before the replicas "
    "start: seeding the XLA device there starts the XLA runtime and torch_xla then refuses "
    "to launch ('Runtime is already initialized'); seed the XLA device in the function each "
    "replica runs"
)


def _applies(model: ScriptModel) -> bool:
    """A training script that a conversion moves onto XLA and that seeds no XLA generator
    yet: on CUDA, or already on the XLA device through XLA101's fix alone (the finding must
    not vanish because that fix came first; ``device_intent.being_converted``). Scripts
    written for XLA by hand, and those whose framework (accelerate, Lightning, the HF
    Trainer) seeds the device itself, are left alone."""
    if model.uses_trainer or ownership(model).framework is not None:
        return False
    if not model.training_loops or not being_converted(model):
        return False
    return not any(model.call_name(c) in SEEDS_XLA for c in model.calls)


def _seed_text(model: ScriptModel, e: Emitter, seed: ast.expr) -> str:
    if isinstance(seed, ast.Constant) and type(seed.value) is int and seed.value >= 0:
        return model.segment(seed)
    return f"{e.torch}.initial_seed()"


class _Launch:
    """Where a launcher's parent process runs, computed once per script."""

    def __init__(self, model: ScriptModel) -> None:
        self.launched = is_launched(model)
        # Without a launcher yet, XLA204 may wrap the main guard's entry in _mp_fn.
        wrapped = None if self.launched else guard_entry(model)
        self.active = self.launched or (model.is_distributed and wrapped is not None)
        if self.active:
            self.replicas = replica_functions(model, launch_targets(model, wrapped))
            self.parents = parent_functions(model, wrapped)

    def in_parent(self, model: ScriptModel, line: int) -> bool:
        return self.active and runs_in_parent(model, line, self.replicas, self.parents)


def _imported_by_workers(model: ScriptModel, call: ast.Call) -> bool:
    """Module-level code outside the main guard: a spawned worker re-imports the script and
    runs it too."""
    return not any(
        isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) or is_main_guard(a)
        for a in model.ancestors(call)
    )


def _accelerate_seeds(model: ScriptModel, seeds: list[ast.Call]) -> Iterator[Finding]:
    """An accelerate script seeded with ``torch.manual_seed`` alone (k-diffusion's per-process
    ``torch.manual_seed(seeds[accelerator.process_index])``, held-out 45): accelerate seeds the
    XLA device only through its own ``set_seed``, so on XLA every process draws its device
    noise from the default seed, the same in all of them. No fix: the script runs on GPUs as
    well, where it needs no torch_xla, and ``set_seed`` also reseeds Python's random and
    NumPy."""
    if ownership(model).framework != "accelerate" or not model.training_loops:
        return
    if any(model.call_name(c) in SEEDS_XLA for c in model.calls):
        return
    for call in seeds:
        seed = arg_or_keyword(call, 0, "seed")
        shown = model.segment(seed) if seed is not None else "seed"
        yield Finding(
            CODE,
            "torch.manual_seed seeds the CPU and CUDA generators: when accelerate runs this "
            "script on an XLA device, that device's generator is not seeded (accelerate seeds "
            "it only in its own set_seed), so its random numbers (noise drawn on the device, "
            "dropout) keep the default seed, the same in every process",
            model.span(call),
            Severity.WARNING,
            manual=f"Seed with accelerate.utils.set_seed({shown}), which seeds the XLA device "
            "too (and Python's random and NumPy), or call torch_xla.manual_seed("
            f"{shown}) where torch_xla is available.",
        )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    seeds = list(model.calls_to(*TORCH_SEEDS))
    if not seeds:
        return
    if not _applies(model):
        yield from _accelerate_seeds(model, seeds)
        return
    launch = _Launch(model)
    for call in seeds:
        seed = arg_or_keyword(call, 0, "seed")
        stmt = model.enclosing_statement(call)
        if seed is None or stmt is None:
            continue
        in_parent = launch.in_parent(model, call.lineno)
        e = Emitter(model)
        code = xla_api.manual_seed(e, ctx.target, _seed_text(model, e, seed))
        message = (
            "torch.manual_seed seeds the CPU and CUDA generators, not the XLA device's: after "
            "conversion the device's random numbers (dropout, torch.randn(..., device=...)) "
            "no longer follow this seed; seed the XLA device as well"
        )
        if in_parent and launch.launched:
            if _imported_by_workers(model, call):
                # Module-level code runs again in every spawned worker, where it seeded CUDA;
                # here it also runs in the parent, which must not start the XLA runtime.
                yield Finding(
                    CODE,
                    message,
                    model.span(call),
                    Severity.WARNING,
                    manual=f"Call {code} at the start of the function each worker runs (at "
                    "module level it would start the XLA runtime in the launcher's parent).",
                )
            # A seed in main() or the main guard never reached the spawned workers' devices.
            continue
        # Only a statement that is the seed call itself surely runs it just before the
        # next statement (not one inside a comprehension, a lambda or a conditional).
        simple = isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign) and stmt.value is call
        if not simple:
            yield Finding(
                CODE,
                message,
                model.span(call),
                Severity.WARNING,
                manual=f"Call {code} right after this seed.",
            )
            continue
        reason = PARENT_REVIEW.format(line=line_ref(call.lineno)) if in_parent else ""
        yield Finding(
            CODE,
            message,
            model.span(call),
            Severity.WARNING,
            fix=Fix(
                f"Seed the XLA device too: {code}",
                (InsertAfter(model.span(stmt), code), *e.imports),
                safe=not reason,
                review_reason=reason,
            ),
        )


HOVER = """\
**XLA116 · torch.manual_seed does not seed the XLA device**

`torch.manual_seed(s)` seeds the CPU and CUDA generators; the XLA device has its own.
Seed it as well, right after:

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `torch_xla.manual_seed(s)` |
| legacy (1.13) | `xm.set_rng_state(s)` |

A seed that is not a non-negative literal is passed as `torch.initial_seed()`
(torch_xla rejects negative seeds).
"""

RULE = Rule(
    code=CODE,
    name="manual-seed",
    category=Category.CONVERSION,
    summary="torch.manual_seed does not seed the XLA device → also torch_xla.manual_seed(...) (dropout and device noise follow the seed again)",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={"torch.manual_seed": HOVER, "torch_xla.manual_seed": HOVER},
)
