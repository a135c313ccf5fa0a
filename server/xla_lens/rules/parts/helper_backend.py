"""XLA118: the script's "nccl" that becomes the backend of a process group a workspace helper
builds (``launch(main, n, backend=args.dist_backend)`` with ``--dist-backend`` defaulting to
"nccl", the helper spawning a worker that calls ``init_process_group(backend=backend)``).
Reported where the literal is written, with no fix: the helper's file must change too, and
the helper may read the value for other things (``semantic/workspace_backend.py`` follows
the parameter).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.arguments import literal_sources
from ...semantic.model import ScriptModel, arg_or_keyword
from ...semantic.node_helpers import const_str
from ...semantic.workspace_backend import backend_parameter
from ...semantic.workspace_calls import HelperTarget
from ..base import Finding, Severity
from ..xla205_ddp_backend import CUDA_BACKENDS
from .library_autocast import display_path


def backend_literals(
    model: ScriptModel, call: ast.Call, helper: HelperTarget, said: set[int], code: str
) -> Iterator[Finding]:
    """``launch(main, n, backend=args.dist_backend)`` whose helper builds the process group
    from that parameter: the "nccl" the script writes for it (at the call, an argparse
    default, a config dict) is the backend there. No fix: the helper's file changes too."""
    param = backend_parameter(helper)
    if param is None:
        return
    arg = next((k.value for k in call.keywords if k.arg == param.name), None)
    if arg is None and param.index is not None and param.index < len(call.args):
        if not any(isinstance(a, ast.Starred) for a in call.args[: param.index + 1]):
            arg = call.args[param.index]
    if arg is None:
        return
    where = display_path(model.path, helper.path)
    for literal in literal_sources(model, arg) or []:
        if const_str(literal) not in CUDA_BACKENDS or id(literal) in said:
            continue
        if id(literal) in _read_by_own_inits(model):
            continue  # the script's own init_process_group reads it: XLA205 says it, with a fix
        said.add(id(literal))
        yield Finding(
            code,
            f'"{const_str(literal)}" here becomes the process-group backend in {where} '
            f"(line {param.init_line}: init_process_group(backend={param.name})) through "
            f"`{helper.shown}(...)` at line {call.lineno}: on XLA devices the backend is "
            '"xla"',
            model.span(literal),
            Severity.WARNING,
            manual=f'make it "xla" (and import torch_xla.distributed.xla_backend) when you '
            f"convert {where}: the process group is built there",
        )


def _read_by_own_inits(model: ScriptModel) -> set[int]:
    """The backend literals the script's own ``init_process_group`` calls read."""

    def build() -> set[int]:
        out: set[int] = set()
        for init in model.calls_to("torch.distributed.init_process_group"):
            backend = arg_or_keyword(init, 0, "backend")
            if backend is not None:
                out.update(id(s) for s in literal_sources(model, backend) or [])
        return out

    return model.memo(("XLA118", "own init backends"), build)
