"""What a finding will say and fix, before it is a rule's ``Finding``.

Some rules keep their site analysis and wording in ``semantic`` helper modules (XLA101's
pickers and flag idioms); those cannot build ``rules.base.Finding`` (semantic comes first in
the layering), so they return ``Advice`` and the rule turns each into a ``Finding`` with its code.
"""

from __future__ import annotations

from dataclasses import dataclass

from .edits import EditOp
from .span import Span


@dataclass(frozen=True)
class FixPlan:
    title: str
    ops: tuple[EditOp, ...]
    safe: bool = True
    # Why the fix needs review: required when ``safe`` is False.
    review_reason: str = ""


@dataclass(frozen=True)
class Advice:
    message: str
    span: Span
    fix: FixPlan | None = None
    # What to do by hand when there is no fix.
    manual: str | None = None
    # An information rather than a warning (nothing to change to run on XLA).
    info: bool = False
