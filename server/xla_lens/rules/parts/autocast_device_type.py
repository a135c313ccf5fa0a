"""XLA102 at the line that derives an autocast's device type by looking for "cuda".

``device_type = "cuda" if "cuda" in device else "cpu"`` then
``ctx = nullcontext() if device_type == "cpu" else torch.autocast(device_type=device_type)``:
once ``device`` is the XLA device the test is false, ``device_type`` is "cpu", and the
autocast is never entered (or is a CPU autocast, which casts nothing on XLA tensors). The
conversion would silently train in fp32, whatever the autocast call is rewritten to.

The fix adds an XLA case to the choice, written like the CUDA one:
``"cuda" if "cuda" in device else "xla" if "xla" in device else "cpu"``. For every device the
original ran on the value is unchanged; on an XLA device it is "xla" where it was "cpu".
That is safe only when every read of the name agrees: the autocast's device type, a test that
chooses the autocast the same way for "xla" as for "cuda", a test whose outcome is the same
for "xla" as for "cpu" (``== "cuda"``), a print, or a function of this file whose parameter
is read the same ways. Anything else (a function of another module, a "cpu"-only branch) is
named in a review reason.

A test that lets only "cuda" choose the autocast (llm.c's ``autocast(...) if device_type ==
"cuda" else nullcontext()``) is rewritten by the same fix to ``device_type in ("cuda", "xla")``:
the same outcome for every value the name had, and the autocast's for "xla". Without it the
"xla" case alone would leave the autocast off with nothing left to say so. A name that already
has its "xla" case while such a test remains is reported at the test.

How each read of the name is judged is ``autocast_type_reads.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, const_str
from ...semantic.precision import device_strings
from ..base import Finding, Fix, Replace, RuleContext, Severity
from .autocast_type_reads import AFTER, Reads, classify_read, compare_read, other_branch, reads_of

CODE = "XLA102"
# The fix's title: a script whose device waits for review still gets it (the new case is
# inert until the device is XLA; engine/consistency.py lets it through).
XLA_CASE_TITLE = "Add the XLA case"
MAX_DEPTH = 3  # functions of this file followed from the derivation


def derivation_findings(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        finding = _derivation(model, node, ctx)
        if finding is not None:
            yield finding


def _cuda_test(test: ast.expr) -> tuple[ast.Constant, ast.expr] | None:
    """``"cuda" in d`` / ``d.startswith("cuda")`` / ``d == "cuda"`` / ``d.type == "cuda"``:
    the "cuda" literal and the device expression it is compared with."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right, op = test.left, test.comparators[0], test.ops[0]
        if isinstance(op, ast.In) and const_str(left) == "cuda":
            return left, right  # type: ignore[return-value]
        if isinstance(op, ast.Eq):
            if const_str(right) == "cuda":
                return right, left  # type: ignore[return-value]
            if const_str(left) == "cuda":
                return left, right  # type: ignore[return-value]
        return None
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Attribute)
        and test.func.attr == "startswith"
        and len(test.args) == 1
        and not test.keywords
        and const_str(test.args[0]) == "cuda"
    ):
        return test.args[0], test.func.value  # type: ignore[return-value]
    return None


def _has_xla_case(node: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("xla")
        for n in ast.walk(node)
    )


def _derivation(model: ScriptModel, assign: ast.Assign, ctx: RuleContext) -> Finding | None:
    value = assign.value
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
        return None
    if not isinstance(value, ast.IfExp) or const_str(value.body) != "cuda":
        return None
    found = _cuda_test(value.test)
    fallback = const_str(value.orelse) if not isinstance(value.orelse, ast.IfExp) else "cpu"
    if found is None or fallback is None or fallback.startswith(("cuda", "xla")):
        return None
    if _has_xla_case(value.orelse):
        return _stale_test(model, assign)  # already converted: is the autocast chosen on XLA?
    literal, subject = found
    strings = device_strings(model, subject)
    if strings is not None and "cuda" not in strings:
        return None  # this script never runs it on CUDA
    name = assign.targets[0].id
    reads = reads_of(model, assign, name)
    if reads is None:
        return None
    found_reads = Reads()
    for read in reads:
        classify_read(model, read, found_reads, MAX_DEPTH)
    if not found_reads.direct and not found_reads.gates:
        return None
    if ctx.target == "legacy" and found_reads.direct:
        line = found_reads.direct[0].lineno  # type: ignore[attr-defined]
        found_reads.problems.insert(
            0,
            f'torch 1.13\'s torch.autocast has no "xla" device type: use torch_xla.amp.autocast '
            f"at line {line_ref(line)} instead (XLA102 there)",
        )
    return _finding(model, assign, value, literal, fallback, found_reads)


def _finding(
    model: ScriptModel,
    assign: ast.Assign,
    value: ast.IfExp,
    literal: ast.Constant,
    fallback: str,
    reads: Reads,
) -> Finding:
    name = assign.targets[0].id  # type: ignore[attr-defined]
    if reads.gates:
        read, chooser = reads.gates[0]
        other = other_branch(chooser)
        shown = f"`{model.segment(other)}`" if other is not None else "no autocast"
        consequence = f"line {line_ref(read.lineno)} chooses {shown} instead of the autocast"  # type: ignore[attr-defined]
    else:
        read = reads.direct[0]
        consequence = (
            f'the autocast at line {line_ref(read.lineno)} gets device type "{fallback}", which casts '  # type: ignore[attr-defined]
            "nothing on XLA tensors"
        )
    message = (
        f'`{name}` looks for "cuda" in the device: on the XLA device it is "{fallback}", so '
        f"{consequence}, and the converted run silently loses mixed precision"
    )
    fix = _fix(model, value, literal)
    if fix is not None and reads.test_edits:
        fix = Fix(fix.title + ", and let it choose the autocast", (*fix.ops, *reads.test_edits))
    manual = None
    if fix is None:
        manual = f'make `{name}` "xla" on the XLA device'
    elif reads.problems:
        reason = "; ".join(dict.fromkeys(reads.problems))
        fix = Fix(fix.title, fix.ops, safe=False, review_reason=reason)
        manual = f"review: {reason}"
    return Finding(CODE, message, model.span(value), Severity.WARNING, fix=fix, manual=manual)


def _stale_test(model: ScriptModel, assign: ast.Assign) -> Finding | None:
    """The name already has its "xla" case, but a test still lets only "cuda" choose the
    autocast (``ctx = autocast(...) if device_type == "cuda" else nullcontext()``): the
    converted run silently stays in fp32."""
    name = assign.targets[0].id  # type: ignore[attr-defined]
    reads = reads_of(model, assign, name)
    for read in reads or ():
        cmp = model.parent(read)
        if not isinstance(cmp, ast.Compare) or len(cmp.ops) != 1:
            continue
        found = Reads()
        compare_read(model, read, cmp, found)
        stale = [p for p in found.problems if "stay off on XLA" in p] or found.test_edits
        if not stale:
            continue
        message = (
            f'`{model.segment(cmp)}` is false for "{AFTER}": `{name}` is "{AFTER}" on the XLA '
            "device, so the autocast stays off there and the run silently loses mixed precision"
        )
        if not found.test_edits:
            manual = 'make the test treat "xla" like "cuda"'
            return Finding(CODE, message, model.span(cmp), Severity.WARNING, manual=manual)
        edit = found.test_edits[0]
        reason = (
            f"turns the autocast on on XLA ({edit.code}): the run there computes in the "
            "autocast's dtype where it ran in fp32"
        )
        fix = Fix(f"Let XLA choose the autocast: {edit.code}", (edit,), safe=False,
                  review_reason=reason)  # fmt: skip
        return Finding(
            CODE, message, model.span(cmp), Severity.WARNING, fix=fix, manual=f"review: {reason}"
        )
    return None


def _fix(model: ScriptModel, value: ast.IfExp, literal: ast.Constant) -> Fix | None:
    lit = model.segment(literal)
    test = model.segment(value.test)
    body = model.segment(value.body)
    if not lit or test.count(lit) != 1 or lit.count("cuda") != 1 or body.count("cuda") != 1:
        return None
    xla_test = test.replace(lit, lit.replace("cuda", "xla"))
    xla_body = body.replace("cuda", "xla")
    code = f"{xla_body} if {xla_test} else {model.segment(value.orelse)}"
    return Fix(
        f"{XLA_CASE_TITLE}: {xla_body} if {xla_test}",
        (Replace(model.span(value.orelse), code),),
    )
