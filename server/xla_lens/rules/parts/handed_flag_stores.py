"""XLA101: a CUDA flag set from an availability question and handed to a module that picks
the device by it (semantic/handed_flags.py). On an XLA host the flag is False, so that
module's CPU side runs even once its CUDA side picks the XLA device: report the store, with
the module and line that read it. No fix: what the flag should become depends on what else
it guards (the reader's other CUDA-only set-up), which the reviewer checks there."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.advice import Advice
from ...semantic.handed_flags import device_flag_reader, reads_flag_for_device
from ...semantic.model import ScriptModel
from ...semantic.pickers import FLAG_WORDS, mentions_availability
from .library_autocast import display_path

MANUAL = (
    "Set `{flag}` from the user's choice alone (drop the availability test from it) once "
    "{module} picks the XLA device where it picked CUDA (`xla-lens check {module}`), or make "
    "{module} test for the XLA device instead."
)


def handed_flag_advice(model: ScriptModel) -> Iterator[Advice]:
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        if len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and any(w in target.attr.lower() for w in FLAG_WORDS)
            and mentions_availability(model, node.value, follow=False)
        ):
            continue
        if reads_flag_for_device(model.tree, target.attr):
            continue  # this file's own device choice: its picker findings cover the flag
        reader = device_flag_reader(model, target.attr)
        if reader is None:
            continue
        flag = model.segment(target)
        module = display_path(model.path, reader.path)
        yield Advice(
            f"`{flag}` is True only where CUDA is available: on an XLA host it is False, and "
            f"{module} tests it to pick or move to the device (line {reader.line}), so after "
            "conversion that code is skipped and the script trains on the CPU",
            model.span(node.value),
            manual=MANUAL.format(flag=flag, module=module),
        )
