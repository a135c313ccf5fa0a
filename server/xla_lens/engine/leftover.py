"""What a conversion leaves to the user, said plainly: the findings that keep the script off the
XLA device, the fixes that wait for a review, and the changes only a person can make.

Convert and ``fix`` apply only safe fixes, so a script whose device choice needs a review still
trains where it did before; the user must hear that, not just "converted".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..rules.base import Finding, Severity
from ..rules.xla118_workspace_helper import leaves_device_by_hand

# Findings that, left as they are, keep the model or its optimizer off the XLA device.
DEVICE_CODES = frozenset({"XLA101", "XLA109"})
# The script places nothing on any device (a CPU-only script): it surely stays on the CPU
# until a person adds the device, the model's move and the batches' moves (no fix exists).
UNPLACED_CODES = frozenset({"XLA117"})


def _where(f: Finding) -> str:
    return f"line {f.span.start.line + 1} ({f.code})"


@dataclass(frozen=True)
class Leftover:
    # Device findings whose fix waits for review: the script stays where it ran.
    off_device: list[Finding] = field(default_factory=list)
    review: list[Finding] = field(default_factory=list)
    manual: list[Finding] = field(default_factory=list)
    # Device findings with no fix (a CUDA index also read as a number, a helper elsewhere):
    # whether the script reaches XLA depends on what the person does there.
    device_by_hand: list[Finding] = field(default_factory=list)
    # Nothing in the script is placed on any device: it trains on the CPU after conversion.
    unplaced: list[Finding] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.off_device or self.review or self.manual)

    def statement(self, how_to_review: str) -> str:
        """One paragraph for a person: what still stands between the script and XLA;
        ``how_to_review`` says where the review fixes are (editor: quick fixes; CLI: a flag)."""
        parts = []
        if self.unplaced:
            lines = ", ".join(_where(f) for f in self.unplaced[:4])
            parts.append(
                "The script does not reach the XLA device: nothing in it places the model or its "
                f"batches on a device, so it still trains on the CPU ({lines}); add the device, "
                "move the model before its optimizer is built, and move every batch."
            )
        if self.off_device:
            lines = ", ".join(_where(f) for f in self.off_device[:4])
            more = f" and {len(self.off_device) - 4} more" if len(self.off_device) > 4 else ""
            parts.append(f"The script does not reach the XLA device yet: see {lines}{more}.")
        if self.device_by_hand:
            lines = ", ".join(_where(f) for f in self.device_by_hand[:4])
            more = (
                f" and {len(self.device_by_hand) - 4} more" if len(self.device_by_hand) > 4 else ""
            )
            parts.append(f"Check the device by hand at {lines}{more}.")
        if self.review:
            n = len(self.review)
            parts.append(
                f"{n} fix{'es' * (n != 1)} {'wait' if n != 1 else 'waits'} for your review"
                f" ({how_to_review})."
            )
        if self.manual:
            n = len(self.manual)
            parts.append(f"{n} item{'s' * (n != 1)} need{'s' * (n == 1)} a change by hand.")
        return " ".join(parts)


def leftover(remaining: list[Finding]) -> Leftover:
    device = [f for f in remaining if f.code in DEVICE_CODES and f.severity <= Severity.WARNING]
    off_device = [f for f in device if f.fix is not None]
    device_by_hand = [f for f in device if f.fix is None]
    # A helper of another module that chooses the device (XLA118): settled in that file.
    device_by_hand += [f for f in remaining if leaves_device_by_hand(f)]
    device_by_hand.sort(key=lambda f: f.span.start)
    review = [f for f in remaining if f.fix is not None and not f.fix.safe]
    manual = [f for f in remaining if f.fix is None]
    unplaced = [f for f in remaining if f.code in UNPLACED_CODES]
    return Leftover(off_device, review, manual, device_by_hand, unplaced)


EDITOR_REVIEW = 'the quick fixes marked "review"'
CLI_REVIEW = "`xla-lens fix --unsafe-fixes` applies them"
# After ``--unsafe-fixes`` the only review fixes left are those held back with the device.
CLI_HELD = "held back with the device change: make it, then run `xla-lens fix --unsafe-fixes` again"

__all__ = [
    "CLI_HELD",
    "CLI_REVIEW",
    "DEVICE_CODES",
    "UNPLACED_CODES",
    "EDITOR_REVIEW",
    "Leftover",
    "leftover",
]
