"""Another rule's findings with the safety the engine finally gives their fixes.

A fix that is safe only because another rule's fix is applied too (XLA107 leaving a loop's
sync to XLA106's ``pl.MpDeviceLoader`` wrap; XLA401's step closure counting on that wrap or
on XLA107's sync) must ask whether that fix is *applied*, not whether the rule offers it as
safe: the engine drops what the user silenced (settings, ``# xla-lens: ignore``) and then
leaves alone code that never runs on XLA (``xla_branch_filter``), drops torch_xla fixes
from a script Lightning runs on any device (``framework_device``) and holds back, for
review, every safe fix that writes an XLA runtime call into the launcher's parent process
(``launch_safety``). Counting on the raw rule output wrote, for instance, a
step closure into a loop whose wrap the engine held back: nothing synced, the report never ran.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...semantic.model import ScriptModel
from ..base import Finding, RuleContext, Span, Target
from ..xla204_mp_fn import check as launch_check
from .data_parallel_hold import hold_for_data_parallel
from .framework_device import leave_framework_device
from .launch_safety import review_parent_runtime_fixes
from .scripted_code import leave_scripted_code
from .stale_optimizer_hold import hold_device_fixes
from .xla_branch_filter import leave_non_xla_code

Check = Callable[[ScriptModel, RuleContext], Iterable[Finding]]


def _unsilenced(model: ScriptModel, findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if not model.silenced(f.code, f.span.start.line, f.span.end.line)]


def _launcher(model: ScriptModel, target: Target) -> list[Finding]:
    """XLA204's findings as the engine keeps them (their fix decides the parent's code)."""
    return model.memo(
        ("final_fixes launcher", target),
        lambda: _unsilenced(model, launch_check(model, RuleContext(target))),
    )


def final_findings(model: ScriptModel, code: str, check: Check, target: Target) -> list[Finding]:
    """``check``'s findings as the engine reports them: silenced ones dropped, launch safety
    applied. A crash of ``check`` (the engine reports it) means nothing of it is applied."""

    def compute() -> list[Finding]:
        try:
            own = _unsilenced(model, check(model, RuleContext(target)))
            launcher = [] if code == "XLA204" else _launcher(model, target)
        except Exception:
            return []
        # The engine's order: code that never runs on XLA is left alone, then launch safety.
        kept = leave_scripted_code(
            model, leave_framework_device(model, leave_non_xla_code(model, own + launcher))
        )
        kept = hold_for_data_parallel(model, hold_device_fixes(model, kept, target), target)
        return [f for f in review_parent_runtime_fixes(model, kept) if f.code == code]

    return model.memo(("final_fixes", code, target), compute)


def applied_spans(model: ScriptModel, code: str, check: Check, target: Target) -> frozenset[Span]:
    """Spans of the findings whose safe fix Convert (``fix_source``) applies."""
    return model.memo(
        ("final_fixes applied", code, target),
        lambda: frozenset(
            f.span
            for f in final_findings(model, code, check, target)
            if f.fix is not None and f.fix.safe
        ),
    )
