"""Is a device expression the XLA device once the safe fixes are applied?

A fix that hands ``device`` to an XLA API (``pl.MpDeviceLoader(loader, device)``) is right
only when ``device`` is the XLA device by then: with the CPU or CUDA device the loader fails
at the first batch ("Check failed: device.type() == at::kXLA"). ``device`` usually becomes
the XLA device through XLA101's rewrite of the script's device picker, and that rewrite is
itself safe only sometimes (a picker block that also runs ``set_device_index``, a device
used as a string, a guard that decides differently on XLA: review). So the answer follows
``device`` to every value it can hold — through local assignments and through the
arguments every caller in this file passes for a ``device`` parameter — and accepts a value
only when it already is the XLA device or a *safe* XLA101 fix replaces it by the XLA device.
"""

from __future__ import annotations

import ast

from ...semantic import xla_api
from ...semantic.arguments import argparse_options, local_bindings
from ...semantic.line_refs import line_ref
from ...semantic.model import Emitter, ScriptModel
from ...semantic.params import argument_values
from ...semantic.precision import device_strings
from ..base import Replace, ReplaceStatement, RuleContext, Span, Target
from ..xla101_cuda_device import check as device_check
from ..xla204_mp_fn import check as launch_check
from .framework_device import leave_framework_device
from .launch_safety import review_parent_runtime_fixes

MAX_DEPTH = 4


def _device_edits(
    model: ScriptModel, target: Target
) -> list[tuple[bool, Replace | ReplaceStatement]]:
    """XLA101's value and statement rewrites, each with whether its fix is safe (once per
    parse and target)."""

    def compute() -> list[tuple[bool, Replace | ReplaceStatement]]:
        out = []
        ctx = RuleContext(target)
        try:
            findings = list(device_check(model, ctx))
            # The launcher XLA204 may add decides which code is the launcher's parent, where
            # the engine holds a device fix back for review (launch_safety): count on it only
            # as the engine will apply it.
            launcher = [
                f
                for f in launch_check(model, ctx)
                if not model.silenced(f.code, f.span.start.line, f.span.end.line)
            ]
        except Exception:
            # The engine reports XLA101's crash itself; here it only means nothing is
            # proven about the device, so every fix that depends on it waits for review.
            return []
        # In the engine's order; neither drops a finding, so the slice is XLA101's own.
        kept = leave_framework_device(model, findings + launcher)
        findings = review_parent_runtime_fixes(model, kept)[: len(findings)]
        for f in findings:
            if f.fix is None:
                continue
            # A fix the user silenced (settings, ignore comment) is never applied.
            applied = f.fix.safe and not model.silenced(f.code, f.span.start.line, f.span.end.line)
            for op in f.fix.ops:
                if isinstance(op, Replace | ReplaceStatement):
                    out.append((applied, op))
        return out

    return model.memo(("device_after_fixes", target), compute)


def _edits_at_line(
    model: ScriptModel, target: Target, line: int
) -> list[tuple[bool, Replace | ReplaceStatement]]:
    """The XLA101 edits whose span covers ``line``, in ``_device_edits`` order (an index
    built once per parse: a scan of every edit per device site was quadratic)."""

    def compute() -> dict[int, list[tuple[bool, Replace | ReplaceStatement]]]:
        out: dict[int, list[tuple[bool, Replace | ReplaceStatement]]] = {}
        for edit in _device_edits(model, target):
            span = edit[1].span
            for covered in range(span.start.line, span.end.line + 1):
                out.setdefault(covered, []).append(edit)
        return out

    return model.memo(("device_edits_by_line", target), compute).get(line, [])


def _line(node: ast.AST) -> int:
    return getattr(node, "lineno", 0)


# What XLA101 writes for a string-typed device (an option's default).
XLA_TEXTS = frozenset({'"xla"', "'xla'"})


class _Resolver:
    def __init__(self, model: ScriptModel, target: Target) -> None:
        self.model = model
        self.target = target
        self.code = xla_api.device(Emitter(model), target)

    def why_not(self, device: str, at: ast.AST) -> str:
        """ "" when ``device`` (a name, or the XLA device call itself) is the XLA device where
        ``at`` runs once the safe fixes are in; else why that is not known."""
        if device == self.code:
            return ""
        return self._name(device, at, 0) or ""

    # Each step answers None when the value is the XLA device, else a reason.
    def _name(self, name: str, at: ast.AST, depth: int) -> str | None:
        if depth > MAX_DEPTH:
            return f"`{name}` is passed through too many functions to follow"
        fn = self.model.enclosing_function(at)
        if fn is not None:
            positional = [*fn.args.posonlyargs, *fn.args.args]
            index = next((i for i, a in enumerate(positional) if a.arg == name), None)
            if index is None and any(a.arg == name for a in fn.args.kwonlyargs):
                index = -1
            if index is not None and not self._rebound(fn, name):
                values = argument_values(self.model, fn, index, name)
                if not values:
                    return (
                        f"`{name}` is a parameter of {fn.name}() and no call in this file "
                        "shows that it receives the XLA device"
                    )
                for v in values:
                    why = self._value(v, depth + 1)
                    if why is not None:
                        return why
                return None
        binds = local_bindings(self.model, name, at)
        if not binds:
            return f"xla-lens cannot see where `{name}` is set"
        for b in binds:
            why = self._binding(b, depth + 1)
            if why is not None:
                return why
        return None

    def _rebound(self, fn: ast.AST, name: str) -> bool:
        return any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for n in self.model.walk_scope(fn)
        )

    def _binding(self, stmt: ast.Assign | ast.AnnAssign, depth: int) -> str | None:
        value = stmt.value
        if value is None:
            return f"line {line_ref(_line(stmt))} leaves the device unset"
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if len(targets) == 1:
            expected = f"{self.model.segment(targets[0])} = {self.code}"
            covered = self._covered(self.model.span(stmt), statement=expected)
            if covered is not None:
                return covered or None
        return self._value(value, depth)

    def _value(self, value: ast.AST, depth: int) -> str | None:
        covered = self._covered(self.model.span(value), expression=True)
        if covered is not None:
            return covered or None
        if device_strings(self.model, value) == {"xla"}:
            return None  # already the XLA device
        if isinstance(value, ast.Name):
            return self._name(value.id, value, depth + 1)
        if self._option_made_xla(value):
            return None
        text = self.model.segment(value)
        return f"line {line_ref(_line(value))} sets it to `{text[:60]}`, which no safe fix makes the XLA device"

    def _option_made_xla(self, value: ast.AST) -> bool:
        """``torch.device(args.device)`` / ``args.device`` whose ``--device`` default a safe
        XLA101 fix makes "xla" (held-out 17, BLIP)."""
        if isinstance(value, ast.Call) and self.model.call_name(value) == "torch.device":
            value = value.args[0] if len(value.args) == 1 and not value.keywords else value
        if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)):
            return False
        option = argparse_options(self.model).get(value.attr)
        default = option.default if option is not None else None
        if default is None:
            return False
        span = self.model.span(default)
        return any(
            safe and isinstance(op, Replace) and op.span == span and op.code.strip() in XLA_TEXTS
            for safe, op in _edits_at_line(self.model, self.target, span.start.line)
        )

    def _covered(
        self, span: Span, *, statement: str | None = None, expression: bool = False
    ) -> str | None:
        """ "" when a safe XLA101 fix rewrites ``span`` to the XLA device, a reason when only
        a fix for review does, None when no XLA101 rewrite covers it."""
        found = None
        for safe, op in _edits_at_line(self.model, self.target, span.start.line):
            if not op.span.contains(span):
                continue
            if isinstance(op, ReplaceStatement):
                if statement is None:
                    continue
                makes_xla = op.code.split("#", 1)[0].strip() == statement
            else:
                if not expression:
                    continue
                makes_xla = op.code.strip() == self.code
            if makes_xla and safe:
                return ""
            line = line_ref(op.span.start.line + 1)
            found = (
                f"the device set at line {line} becomes the XLA device only through XLA101's "
                "fix, which is left for review"
                if makes_xla
                else f"XLA101's fix does not make line {line} the XLA device"
            )
        return found


def value_not_xla(model: ScriptModel, ctx: RuleContext | Target, value: ast.AST) -> str:
    """Why the device expression ``value`` may not be the XLA device once the safe fixes
    are in ("" when it provably is)."""
    target = ctx.target if isinstance(ctx, RuleContext) else ctx
    return _Resolver(model, target)._value(value, 0) or ""


def device_not_xla(model: ScriptModel, ctx: RuleContext | Target, device: str, at: ast.AST) -> str:
    """Why ``device`` may not be the XLA device at ``at`` after the safe fixes ("" when it
    provably is)."""
    target = ctx.target if isinstance(ctx, RuleContext) else ctx
    return _Resolver(model, target).why_not(device, at)
