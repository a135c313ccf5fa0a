"""A device option read behind a CUDA availability test.

``torch.device(args.device if torch.cuda.is_available() else "cpu")`` with
``--device`` defaulting to ``"cuda"``: the option chooses the device only where CUDA is
available. Changing the default to ``"xla"`` alone is the trap of GUIDE.md section I ("rewriting
only the assignment keeps the guard"): an XLA host (a TPU VM, a Trainium instance) has no CUDA,
so the script keeps training on the CPU and looks converted. The test has to go with the
default: ``torch.device(args.device)``.

Dropping it changes nothing else the original meant: with ``--device cpu`` both give the CPU;
the only other difference is an explicit ``--device cuda`` on a host without CUDA, which then
fails loudly in ``torch.device``'s first use instead of quietly using the CPU. The script's
other availability tests must agree with the XLA device as for any picker
(``placement_guards``); when they do not, the change needs review. Pure analysis.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from . import pickers, placement_guards
from .edits import EditOp, Replace
from .model import ScriptModel
from .values import Use


@dataclass(frozen=True)
class OptionGuards:
    """The edits that drop the availability tests around an option's reads, whether that is
    safe with the script's other availability tests, why not, and the tests' lines."""

    ops: tuple[EditOp, ...] = ()
    safe: bool = True
    reason: str = ""
    lines: tuple[int, ...] = ()


def option_guards(model: ScriptModel, uses: list[Use], dest: str) -> OptionGuards:
    """For the reads ``uses`` of a device option: the ``X if <CUDA available> else "cpu"``
    expressions (or the reverse) whose CUDA side is the read."""
    tests = []
    for read in [u.node for u in uses] + _option_reads(model, dest):
        found = _behind_availability(model, read, dest)
        if found is not None and all(t is not found[0] for t, _ in tests):
            tests.append(found)
    if not tests:
        return OptionGuards()
    ops: list[EditOp] = []
    safe, reasons = True, []
    for ifexp, device_side in tests:
        ops.append(Replace(model.span(ifexp), model.segment(device_side)))
        plan = placement_guards.plan(model, ifexp, ifexp.test)
        if plan.ops or not plan.safe:
            # Other code decides by the same test: those edits belong to a picker fix of their
            # own, so this one waits for review rather than rewriting them twice.
            safe = False
            reasons.append(
                plan.reason
                or f"other code at line {plan.ops[0].span.start.line + 1} decides by the same "  # type: ignore[union-attr]
                "availability test"
            )
    return OptionGuards(tuple(ops), safe, "; ".join(reasons), tuple(t.lineno for t, _ in tests))


def _option_reads(model: ScriptModel, dest: str) -> list[ast.AST]:
    """Every ``args.<dest>`` read of the parsed options: ``uses`` stops at the first use that
    matters (held-out 113: ``torch.load(..., map_location=device)`` after
    ``device = torch.device(args.device if torch.cuda.is_available() else "cpu")`` hid the
    test, and the option's review fix left it, so the accepted fix trained on the CPU)."""
    from .arguments import is_parsed_args  # noqa: PLC0415 (arguments imports pickers)

    return [
        n
        for n in model.nodes_of(ast.Attribute)
        if isinstance(n, ast.Attribute)
        and n.attr == dest
        and isinstance(n.ctx, ast.Load)
        and isinstance(n.value, ast.Name)
        and is_parsed_args(model, n.value)
    ]


def _behind_availability(
    model: ScriptModel, use: ast.AST, dest: str
) -> tuple[ast.IfExp, ast.expr] | None:
    """The ``IfExp`` at or around the use ``use`` whose side taken when CUDA is available reads
    the option ``dest`` (``args.device`` or ``torch.device(args.device)``), its other side being
    the CPU; and that side."""
    node: ast.AST | None = use
    for _ in range(3):  # the read, ``torch.device(read)``, the IfExp around it
        if node is None or isinstance(node, ast.IfExp):
            break
        node = model.parent(node)
    if not isinstance(node, ast.IfExp) or not pickers.is_availability(model, node.test):
        return None
    negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
    asked = node.test.operand if negated else node.test  # type: ignore[attr-defined]
    if not isinstance(asked, ast.Call | ast.Name | ast.Attribute):
        return None  # ``device_count() == 0``: which side is CUDA's is not plain enough
    device_side, other = (node.orelse, node.body) if negated else (node.body, node.orelse)
    if not (_reads_option(model, device_side, dest) and pickers.is_other_device(other)):
        return None
    return node, device_side


def _reads_option(model: ScriptModel, side: ast.AST, dest: str) -> bool:
    """``args.device`` / ``device`` (the option's destination), or ``torch.device`` of it."""
    if (
        isinstance(side, ast.Call)
        and model.call_name(side) == "torch.device"
        and len(side.args) == 1
        and not side.keywords
    ):
        side = side.args[0]
    if isinstance(side, ast.Attribute):
        return side.attr == dest
    return isinstance(side, ast.Name) and side.id == dest
