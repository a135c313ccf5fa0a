"""``DataLoader(pin_memory=args.pin_mem)`` where the value is True unless the user turns it off
(XLA403, held-out 7: MAE declares ``--pin_mem`` / ``--no_pin_mem`` with
``set_defaults(pin_mem=True)``). The literal ``pin_memory=True`` is ``pin_memory.py``'s.

Reported only when every value the expression can take by default is True: an argparse option
(its ``set_defaults``, else the first ``add_argument`` of that dest: ``default=True`` or
``action="store_false"``), or a config literal ``literal_sources`` reaches. A value that is False
on an XLA host (``torch.cuda.is_available()``), or out of reach, stays quiet.

The fix drops the keyword from the loader, for review: pinning never changes a batch and an XLA
host has no accelerator torch can pin for (the DataLoader warns and skips it), but the option
would no longer reach this loader, so a user's ``--pin_mem`` silently does nothing there. Changing
the option's default instead would change every other reader of it (another module may read
``args.pin_mem``): left to the user, named in the advice.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ...semantic.arguments import literal_sources, local_bindings
from ...semantic.model import ScriptModel, const_str, keyword
from ..base import Finding, Fix, RemoveKeyword, Severity
from .pin_memory import DATALOADERS, serves_a_cuda_mode

# Names conventionally bound to parsed command-line options (as semantic/arguments.py reads them).
ARGS_NAMES = frozenset({"args", "opt", "opts", "options", "flags", "FLAGS", "hparams", "cfg"})


@dataclass(frozen=True)
class TrueDefault:
    """Where the True comes from, for the message: ``--pin_mem`` (line 12) or the config."""

    origin: str
    option: str | None  # the command-line spelling, when an argparse option sets it


def pin_option_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    if serves_a_cuda_mode(model):
        return
    for call in model.calls_to(*DATALOADERS):
        kw = keyword(call, "pin_memory")
        if kw is None or isinstance(kw.value, ast.Constant) or not _plain_read(kw.value):
            continue
        found = _true_by_default(model, kw.value)
        if found is None:
            continue
        shown = model.segment(kw.value)
        message = (
            f"pin_memory={shown} is True by default ({found.origin}): pinned host memory "
            "serves CUDA copies only; XLA transfers do not use it (MpDeviceLoader overlaps the "
            "copies instead)"
        )
        span = model.span(call)
        ops = [RemoveKeyword(span, "pin_memory")]
        if keyword(call, "pin_memory_device") is not None:
            ops.append(RemoveKeyword(span, "pin_memory_device"))
        what = f"`{found.option}`" if found.option else f"`{shown}`"
        reason = (
            f"{what} would no longer reach this loader (pinning never changes a batch, and an "
            "XLA host has nothing to pin for); or set its default to False instead, if nothing "
            "else reads it"
        )
        fix = Fix(f"Remove pin_memory={shown}", tuple(ops), safe=False, review_reason=reason)
        yield Finding(code, message, model.span(kw.value), Severity.WARNING, fix=fix)


def _plain_read(expr: ast.expr) -> bool:
    """A name, attribute chain or constant subscript: dropping it skips no side effect."""
    if isinstance(expr, ast.Name):
        return True
    if isinstance(expr, ast.Attribute):
        return _plain_read(expr.value)
    if isinstance(expr, ast.Subscript):
        return isinstance(expr.slice, ast.Constant) and _plain_read(expr.value)
    return False


def _true_by_default(model: ScriptModel, expr: ast.expr, depth: int = 0) -> TrueDefault | None:
    if depth > 3:
        return None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        option = (
            _option_default(model, expr.attr)
            if expr.value.id in ARGS_NAMES or _parsed(model, expr.value)
            else None
        )
        if option is not None:
            return option if option.origin else None
    if isinstance(expr, ast.Name):
        binds = local_bindings(model, expr.id, expr)
        if len(binds) == 1 and isinstance(binds[0].value, ast.Attribute):
            return _true_by_default(model, binds[0].value, depth + 1)
    sources = literal_sources(model, expr)
    if sources and all(isinstance(s, ast.Constant) and s.value is True for s in sources):
        lines = sorted({s.lineno for s in sources})
        return TrueDefault(f"set at line {', '.join(map(str, lines))}", None)
    return None


def _parsed(model: ScriptModel, name: ast.Name) -> bool:
    return any(
        isinstance(a.value, ast.Call)
        and isinstance(a.value.func, ast.Attribute)
        and a.value.func.attr in {"parse_args", "parse_known_args"}
        for a in local_bindings(model, name.id, name)
    )


def _option_default(model: ScriptModel, dest: str) -> TrueDefault | None:
    """The option declaring ``dest``: a TrueDefault with an origin when its default is True,
    one with an empty origin when it is declared with another default, None when no option
    declares it. ``set_defaults(dest=...)`` wins over the options' own defaults; among the
    options the first one's default is the one argparse applies."""
    options = [c for c in model.method_calls("add_argument") if _dest(c) == dest]
    if not options:
        return None
    flag = _flag(options[0]) or f"--{dest}"
    for call in reversed(list(model.method_calls("set_defaults"))):
        kw = keyword(call, dest)
        if kw is not None:
            true = isinstance(kw.value, ast.Constant) and kw.value.value is True
            origin = f"`{flag}`: `set_defaults({dest}=True)`, line {call.lineno}" if true else ""
            return TrueDefault(origin, flag)
    first = options[0]
    default = keyword(first, "default")
    action = keyword(first, "action")
    if default is not None:
        true = isinstance(default.value, ast.Constant) and default.value.value is True
    else:
        true = action is not None and const_str(action.value) == "store_false"
    return TrueDefault(f"`{flag}`, line {first.lineno}" if true else "", flag)


def _dest(call: ast.Call) -> str | None:
    kw = keyword(call, "dest")
    if kw is not None:
        return const_str(kw.value)
    names = [s for a in call.args if (s := const_str(a)) is not None]
    long = [s for s in names if s.startswith("--")]
    chosen = long[0] if long else (names[0] if names else "")
    return chosen.lstrip("-").replace("-", "_") or None


def _flag(call: ast.Call) -> str | None:
    names = [s for a in call.args if (s := const_str(a)) is not None]
    long = [s for s in names if s.startswith("--")]
    return long[0] if long else (names[0] if names else None)
