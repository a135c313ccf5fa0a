"""A process group a workspace helper builds for the script.

``launch(main, args)`` from the project's ``utils/engine.py`` calls ``init_process_group``
itself under torchrun (VIRT, held-out 160); ``init_distributed(...)`` then
``model = wrap_ddp(model, local_rank)`` (UniPhy, held-out 161). The script is distributed
though it names neither: replicas run, and a helper may own the gradient all-reduce.
Pure analysis over the sibling summaries (``steps.external``), once per parse.
"""

from __future__ import annotations

from .model import ScriptModel
from .workspace import FunctionFacts


def helper_group(model: ScriptModel) -> FunctionFacts | None:
    """Facts of the first workspace helper the script calls that builds a process group."""

    def compute() -> FunctionFacts | None:
        for call in model.calls:
            facts = model.steps.external(call)
            if facts is not None and facts.group_line:
                return facts
        return None

    return model.memo(helper_group, compute)


__all__ = ["helper_group"]
