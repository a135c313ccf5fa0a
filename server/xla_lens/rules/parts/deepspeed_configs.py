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
