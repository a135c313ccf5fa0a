"""XLA405: a DeepSpeed config handed to the Hugging Face Trainer (``TrainingArguments(...,
deepspeed=args.deepspeed)``, philschmid's FLAN-T5 ZeRO-3 script, held-out 41).

DeepSpeed has no XLA accelerator, and accelerate sets it up only when the process group's
backend is not XLA (``accelerate/state.py``): on an XLA device the ZeRO sharding and CPU
offload the config asks for do not happen, so a model sized for them may not fit, and the
config's own optimizer and precision settings are not the ones that run. On XLA the Trainer
shards with FSDP (``fsdp_config={"xla": True}``) or SPMD. Advice, no fix: replacing the
sharding is a decision about memory and speed, and the config file is outside the script.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.frameworks import ownership
from ...semantic.hf_args import hf_arguments
from ...semantic.model import ScriptModel, keyword
from ..base import Finding, Severity

MANUAL = (
    "Drop the DeepSpeed config on XLA and shard with the Trainer's FSDP (fsdp='full_shard', "
    "fsdp_config={'xla': True}) or with SPMD; keep DeepSpeed for the CUDA runs."
)


def deepspeed_configs(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in hf_arguments(model).calls:
        kw = keyword(call, "deepspeed")
        if kw is None or (isinstance(kw.value, ast.Constant) and kw.value.value is None):
            continue
        literal = isinstance(kw.value, ast.Constant | ast.Dict)
        when = "" if literal else f" (whenever `{model.segment(kw.value)}` names one)"
        yield Finding(
            code,
            f"a DeepSpeed config{when} hands the Trainer's sharding and offload to DeepSpeed, "
            "which has no XLA support: accelerate sets it up only off XLA, so on the XLA "
            "device the ZeRO sharding and offload it asks for do not happen",
            model.span(kw.value),
            Severity.WARNING,
            manual=MANUAL,
        )


# DeepSpeed engine methods an accelerate script calls on its prepared model (a
# ``deepspeed.DeepSpeedEngine`` when accelerate runs DeepSpeed): on XLA the prepared model is
# the plain module, which has none of them.
ENGINE_METHODS = {
    "save_checkpoint": "accelerator.save_state(output_dir) (or save accelerator.unwrap_model(model)'s state dict)",
    "load_checkpoint": "accelerator.load_state(input_dir)",
}
PLUGIN_MANUAL = (
    "On XLA leave the DeepSpeed settings out (guard them with `if accelerator.state."
    "deepspeed_plugin is not None:`), and shard with FSDP or SPMD if the model needs it."
)


def accelerate_deepspeed_uses(model: ScriptModel, code: str) -> Iterator[Finding]:
    """An accelerate script written for DeepSpeed (held-out 52, MOSS's ZeRO-3 fine-tune):
    ``accelerator.state.deepspeed_plugin.deepspeed_config[...] = ...`` and
    ``model.save_checkpoint(dir, step)``. accelerate sets DeepSpeed up only off XLA
    (``accelerate/state.py``), so on XLA ``deepspeed_plugin`` is None (AttributeError on its
    config) and the prepared model is the plain module, with no ``save_checkpoint``."""
    if ownership(model).framework != "accelerate" or "deepspeed" not in model.source:
        return
    for node in model.nodes_of(ast.Attribute):
        assert isinstance(node, ast.Attribute)
        if node.attr != "deepspeed_plugin":
            continue
        parent = model.parent(node)
        if not isinstance(parent, ast.Attribute | ast.Subscript):
            continue  # read as a whole (a None test, a print): fine on XLA
        if _under_deepspeed_test(model, node):
            continue  # ``if getattr(accelerator.state, "deepspeed_plugin", None): ...``
        yield Finding(
            code,
            "`deepspeed_plugin` is None where accelerate runs on XLA (it sets DeepSpeed up "
            f"only off XLA, and DeepSpeed has no XLA support): `{_shown(model, parent)}` "
            "raises AttributeError there",
            model.span(parent),
            Severity.WARNING,
            manual=PLUGIN_MANUAL,
        )
    for call in model.calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in ENGINE_METHODS):
            continue
        if not _prepared(model, func.value):
            continue
        yield Finding(
            code,
            f"`{model.segment(func)}()` is a DeepSpeed engine method: on XLA accelerate runs "
            "without DeepSpeed and the prepared model is the plain module, which has no "
            f"`{func.attr}` (AttributeError)",
            model.span(call),
            Severity.WARNING,
            manual=f"Use {ENGINE_METHODS[func.attr]}, which works with and without DeepSpeed.",
        )


def _under_deepspeed_test(model: ScriptModel, node: ast.AST) -> bool:
    """Inside an ``if`` (or a conditional expression, or after an ``and``) whose test asks
    about DeepSpeed: it runs only where DeepSpeed is set up."""
    for a in model.ancestors(node):
        test = a.test if isinstance(a, ast.If | ast.IfExp | ast.While) else None
        if isinstance(a, ast.BoolOp):
            test = a
        if (
            test is not None
            and "deepspeed" in model.segment(test).lower()
            and not any(n is node for n in ast.walk(test))
        ):
            return True
    return False


def _shown(model: ScriptModel, node: ast.AST) -> str:
    text = " ".join(model.segment(node).split())
    return text if len(text) <= 70 else text[:67] + "..."


def _prepared(model: ScriptModel, node: ast.expr) -> bool:
    """A name some ``accelerator.prepare(...)`` binds (``model, opt = accelerator.prepare(model,
    opt)``)."""
    if not isinstance(node, ast.Name):
        return False
    for a in model.nodes_of(ast.Assign):
        assert isinstance(a, ast.Assign)
        value = a.value
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "prepare"
        ):
            continue
        for target in a.targets:
            names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
            if any(isinstance(n, ast.Name) and n.id == node.id for n in names):
                return True
    return False
