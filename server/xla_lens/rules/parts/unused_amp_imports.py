"""An import of CUDA's AMP that a conversion left unused (XLA102).

``from torch.cuda.amp import GradScaler, autocast``: once XLA102 and XLA103 have rewritten
every use (``torch.autocast("xla", ...)``, the scaler removed), the import binds names nothing
reads, and a converted script still names CUDA's deprecated AMP module at its top. Reported
only in a script that imports torch_xla and is not written for XLA by hand (a conversion in
progress: a later round of ``fix``/Convert removes it), and only when no name the statement
binds is used anywhere in the file; a module that declares ``__all__`` may re-export them and
is left alone. The removal is safe: importing these names has no effect beyond binding them
(``torch`` is imported either way), and nothing reads them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.device_intent import hand_written_xla
from ...semantic.model import ScriptModel
from ..base import Finding, Fix, RemoveStatement, Severity

AMP_MODULE = "torch.cuda.amp"


def _bound(imp: ast.Import | ast.ImportFrom) -> list[str] | None:
    """The names the statement binds, when it imports only from CUDA's AMP module."""
    if isinstance(imp, ast.ImportFrom):
        if imp.level != 0 or any(a.name == "*" for a in imp.names):
            return None
        if imp.module == AMP_MODULE or imp.module == f"{AMP_MODULE}.grad_scaler":
            return [a.asname or a.name for a in imp.names]
        if imp.module == "torch.cuda" and all(a.name == "amp" for a in imp.names):
            return [a.asname or a.name for a in imp.names]
        return None
    if all(a.name == AMP_MODULE and a.asname for a in imp.names):
        return [a.asname for a in imp.names]  # type: ignore[misc]
    return None


def unused_amp_imports(model: ScriptModel, code: str) -> Iterator[Finding]:
    if not model.uses_torch_xla or hand_written_xla(model):
        return
    imports = [(imp, names) for imp in model.import_nodes if (names := _bound(imp))]
    if not imports:
        return
    used = {n.id for n in model.nodes_of(ast.Name)}
    if "__all__" in used:
        return
    for imp, names in imports:
        if any(name in used for name in names):
            continue
        text = model.segment(imp)
        yield Finding(
            code,
            f"`{text}` is unused now that its uses are converted: the script no longer uses "
            "CUDA's AMP module (deprecated in PyTorch for torch.amp)",
            model.span(imp),
            Severity.INFORMATION,
            fix=Fix("Remove the unused CUDA AMP import", (RemoveStatement(model.span(imp)),)),
        )
