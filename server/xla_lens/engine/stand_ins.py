"""Analysing files as if other files held other texts, without writing them.

``fix --diff`` over several files shows what ``fix`` would write, and ``fix`` runs passes until
nothing changes, because a file's fixes may depend on its siblings as converted (a trainer
module's autocast is safe once ``main.py`` picks the XLA device). The preview cannot write the
first pass's output for the second pass to read, so the workspace readers are handed those
texts instead (``diskread.set_overlay``), and their caches, keyed by each file's size and
modification time on disk, are emptied on the way in and out so no answer outlives its text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..rules import xla118_workspace_helper
from ..rules.parts import sibling_fp32_islands
from ..semantic import (
    ddp_wrappers,
    diskread,
    workspace,
    workspace_backend,
    workspace_callers,
    workspace_calls,
    workspace_classes,
    workspace_option_tests,
    workspace_print,
)

_CACHES = (
    workspace,
    workspace_calls,
    workspace_callers,
    workspace_classes,
    workspace_backend,
    workspace_print,
    workspace_option_tests,
    ddp_wrappers,
    xla118_workspace_helper,
    sibling_fp32_islands,
)


def forget_workspace() -> None:
    """Empty every cache of what the workspace's files say."""
    for module in _CACHES:
        module.clear_cache()


@contextmanager
def stand_ins(texts: dict[Path, str]) -> Iterator[None]:
    """Within the block, the workspace readers see ``texts`` for these files."""
    forget_workspace()
    diskread.set_overlay(texts)
    try:
        yield
    finally:
        diskread.set_overlay({})
        forget_workspace()
