"""XLA114: float16 chosen as the training or weight precision, where XLA devices want bfloat16.

TPUs and Trainium compute natively in bfloat16; float16 there is emulated or unsupported,
and it needs loss scaling that bf16 does not (GUIDE G: with bf16 no GradScaler is needed).
Scripts pick fp16 in many places: ``torch_dtype=torch.float16``, ``Accelerator(mixed_precision
="fp16")``, a ``weight_dtype = torch.float16`` variable, a ``mixed_precision_type='fp16'``
default. The fix (float16 → bfloat16) changes the numbers a run computes, so it is offered
for review only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.device_intent import hand_written_xla, runs_on_cuda, uses_xla_device
from ..semantic.model import ScriptModel
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity
from .parts.half_casts import REVIEW_HALF, half_method_casts, to_dtype_arguments

CODE = "XLA114"
HALF = frozenset({"torch.float16", "torch.half"})
FP16_STRINGS = frozenset({"fp16", "float16"})
# Keywords and names whose value is a training or weight precision.
DTYPE_WORDS = ("dtype", "precision")
REVIEW = (
    "bfloat16 keeps float32's range with fewer mantissa bits, so the run's numbers change "
    "(and fp16-only code such as loss scaling may become unnecessary); check results after "
    "the switch"
)
MESSAGE = (
    "float16 on XLA: TPUs and Trainium compute in bfloat16 (float16 is emulated or "
    "unsupported, and needs loss scaling); use bfloat16"
)

HALF_MESSAGE = (
    "on XLA (TPU, Trainium) float16 is emulated or unsupported and needs loss scaling; use "
    "bfloat16, for the model and its batches together"
)


def _short(text: str) -> str:
    return text if len(text) <= 40 and "\n" not in text else "….half"


def _precision_context(name: str | None) -> bool:
    return name is not None and any(w in name.lower() for w in DTYPE_WORDS)


def _half_values(model: ScriptModel, value: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """``torch.float16`` / ``"fp16"`` inside ``value`` (also in ``a if c else b``), with the
    bfloat16 spelling that replaces it. Comparisons are never rewritten."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.IfExp):
            stack += [node.body, node.orelse]
        elif isinstance(node, ast.Attribute) and model.qualname(node) in HALF:
            yield node, model.segment(node.value) + ".bfloat16"
        elif isinstance(node, ast.Constant) and node.value in FP16_STRINGS:
            yield node, '"bf16"' if node.value == "fp16" else '"bfloat16"'


def _sites(model: ScriptModel) -> Iterator[ast.AST]:
    """Values that set a precision: keyword arguments, assignments, parameter defaults,
    argparse defaults."""
    for call in model.calls:
        name = model.call_name(call) or ""
        if name.endswith(("autocast", "Accelerator", "TrainingArguments")):
            continue  # XLA102 rewrites autocast; XLA304 owns accelerate/Trainer mixed precision
        for kw in call.keywords:
            if _precision_context(kw.arg) and kw.arg != "choices":
                yield kw.value
            elif (
                kw.arg == "default"
                and isinstance(call.func, ast.Attribute)
                and (
                    call.func.attr == "add_argument"
                    and any(
                        isinstance(a, ast.Constant)
                        and _precision_context(str(a.value))
                        and "mixed" not in str(a.value)  # --mixed_precision: XLA304's
                        for a in call.args
                    )
                )
            ):
                yield kw.value
    for node in model.nodes_of(ast.Assign, ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [
            t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None
            for t in targets
        ]
        if node.value is not None and any(_precision_context(n) for n in names):
            yield node.value
    for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        positional = [*fn.args.posonlyargs, *fn.args.args]
        pairs = list(
            zip(
                positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults, strict=True
            )
        )
        pairs += [
            (a, d)
            for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)
            if d is not None
        ]
        for arg, default in pairs:
            if _precision_context(arg.arg):
                yield default
    yield from to_dtype_arguments(model)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if hand_written_xla(model):
        # A script written for torch_xla by hand chose its precision on XLA knowingly (BigGAN's
        # TPU port keeps an opt-in `G.half()`, held-out 105): a dtype policy, not a conversion.
        return
    seen: set[int] = set()
    casts = set(to_dtype_arguments(model))
    on_xla_already = not runs_on_cuda(model) and uses_xla_device(model)
    for value in _sites(model):
        if on_xla_already and _an_option_beside_bfloat16(model, value):
            continue
        for node, replacement in _half_values(model, value):
            if id(node) in seen:
                continue
            seen.add(id(node))
            # ``torch.float16 if args.fp16 else torch.bfloat16``: the choice is gone on XLA;
            # writing ``torch.bfloat16 if args.fp16 else torch.bfloat16`` would keep a test
            # that no longer decides anything (held-out 66's Firefly).
            whole = _choice_of_the_same(model, node, replacement)
            yield Finding(
                CODE,
                MESSAGE,
                model.span(node),
                Severity.WARNING,
                fix=Fix(
                    f"Use {replacement.strip(chr(34))} instead",
                    (Replace(model.span(whole or node), replacement),),
                    safe=False,
                    review_reason=REVIEW_HALF if value in casts else REVIEW,
                ),
            )
    for call, fix in half_method_casts(model):
        yield Finding(
            CODE,
            f"`{_short(model.segment(call.func))}()` casts to float16: {HALF_MESSAGE}",
            model.span(call.func),
            Severity.WARNING,
            fix=fix,
        )


def _assigned_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return ast.dump(node.targets[0])
    if isinstance(node, ast.AnnAssign):
        return ast.dump(node.target)
    return None


def _branches_of_the_chain(model: ScriptModel, statement: ast.AST) -> list[list[ast.stmt]] | None:
    """Every branch of the ``if``/``elif``/``else`` chain that has ``statement`` directly in
    one of its branches; None when it is not in one."""
    owner = model.parent(statement)
    if not isinstance(owner, ast.If):
        return None
    while True:
        above = model.parent(owner)
        if isinstance(above, ast.If) and above.orelse == [owner]:
            owner = above
        else:
            break
    branches: list[list[ast.stmt]] = []
    link: ast.If = owner
    while True:
        branches.append(link.body)
        if len(link.orelse) == 1 and isinstance(link.orelse[0], ast.If):
            link = link.orelse[0]
            continue
        if link.orelse:
            branches.append(link.orelse)
        return branches


def _an_option_beside_bfloat16(model: ScriptModel, value: ast.AST) -> bool:
    """``if args.precision == "fp16": dtype = torch.float16`` / ``elif …: dtype =
    torch.bfloat16``: float16 is one option of the script's own, which already offers bfloat16
    under the same name (held-out 125's XLA pre-training script); turning the fp16 branch into
    bf16 would make that option lie. Asked only of a script already on the XLA device: in a
    CUDA script the fp16 branch is usually the one its setup takes (DreamBooth's
    ``accelerator.mixed_precision == "fp16"``, a labelled site of the dev corpus)."""
    statement = model.parent(value)
    target = _assigned_text(statement) if statement is not None else None
    branches = _branches_of_the_chain(model, statement) if target is not None else None
    if not branches:
        return False
    for branch in branches:
        if statement in branch:
            continue
        for other in branch:
            if _assigned_text(other) == target and _reads_bfloat16(model, other):
                return True
    return False


def _reads_bfloat16(model: ScriptModel, statement: ast.AST) -> bool:
    value = getattr(statement, "value", None)
    for node in ast.walk(value) if value is not None else ():
        if isinstance(node, ast.Attribute) and model.qualname(node) == "torch.bfloat16":
            return True
        if isinstance(node, ast.Constant) and node.value in ("bf16", "bfloat16"):
            return True
    return False


def _choice_of_the_same(model: ScriptModel, node: ast.AST, replacement: str) -> ast.AST | None:
    """The ``a if test else b`` around ``node`` whose other branch already reads as
    ``replacement``, when its test has no side effect (a name or attribute read)."""
    choice = model.parent(node)
    if not isinstance(choice, ast.IfExp) or node is choice.test:
        return None
    other = choice.orelse if node is choice.body else choice.body
    plain_test = all(
        isinstance(n, ast.Name | ast.Attribute | ast.Load) for n in ast.walk(choice.test)
    )
    return choice if plain_test and model.segment(other) == replacement else None


HOVER = """\
**XLA114 · float16 → bfloat16 on XLA**

TPUs and Trainium compute in bfloat16. float16 is emulated or unsupported there, and it needs
loss scaling (a GradScaler) that bfloat16 does not: bf16 has float32's exponent range.

| CUDA habit | XLA |
|---|---|
| `torch_dtype=torch.float16` | `torch_dtype=torch.bfloat16` |
| `Accelerator(mixed_precision="fp16")` | `Accelerator(mixed_precision="bf16")` |
| `torch.autocast("cuda", dtype=torch.float16)` | `torch.autocast("xla", dtype=torch.bfloat16)` |

The switch changes the numbers a run computes: it is offered for review, never applied by
Convert.
"""

RULE = Rule(
    code=CODE,
    name="float16",
    category=Category.CONVERSION,
    summary="float16 chosen as the training/weight precision (torch_dtype, mixed_precision, dtype variables) → bfloat16 on XLA",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={"torch.float16": HOVER, "torch.half": HOVER},
)
