"""Whether a file path names the replica that writes it (``"queue" + str(args.rank) +
".pth"``, ``f"ckpt_{rank}.pt"``, a name assigned such a path): then every replica writes a
file of its own, on purpose, and rank-0-only output or a master-only save would lose the
other replicas' files (held-out 15, SwAV's per-rank queue)."""

from __future__ import annotations

import ast
import re

from .model import ScriptModel

# A rank, ordinal or process index in an identifier (``rank``, ``args.rank``, ``local_rank``,
# ``global_ordinal()``, ``process_index``); "master"/"main" name the one replica, not each.
REPLICA_ID = re.compile(
    r"rank|ordinal|process_index"
    # The process's own GPU index as a whole name (``main_worker(gpu, ngpus_per_node, ...)``:
    # HigherHRNet's ``final_state{gpu}.pth.tar``, held-out 83), not a count or a per-GPU size
    # (``ngpus``, ``images_per_gpu``, ``use_gpu``).
    r"|^(?:local_)?gpu(?:_?(?:id|idx|index))?$",
    re.IGNORECASE,
)
MAX_DEPTH = 3


def names_matching(node: ast.AST, pattern: re.Pattern[str]) -> bool:
    """Whether a name or attribute in ``node`` matches ``pattern``."""
    for n in ast.walk(node):
        ident = (
            n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        )
        if ident is not None and pattern.search(ident):
            return True
    return False


def per_replica_path(model: ScriptModel, node: ast.AST | None, depth: int = 0) -> bool:
    """Whether the path ``node`` is built from the replica's rank; a name counts when every
    value assigned to it is (a parameter, with no assignment, does not)."""
    if node is None or depth > MAX_DEPTH:
        return False
    if names_matching(node, REPLICA_ID):
        return True
    if isinstance(node, ast.Name):
        values = model.assigned_from(node.id)
        return bool(values) and all(per_replica_path(model, v, depth + 1) for v in values)
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
    return any(per_replica_path(model, n, depth + 1) for n in names)
