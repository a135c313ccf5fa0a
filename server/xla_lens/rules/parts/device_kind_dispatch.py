"""XLA405: a dispatch on the device's kind that raises for every kind it does not list.

``if "cuda" in dev: ... elif "mps" in dev: ... elif "cpu" in dev: ... else: raise
NotImplementedError(...)`` (pangu-weather-ddp's ``show_memory(device)``, held-out 147, called six
times per step): on XLA ``str(device)`` is ``"xla:0"`` and ``device.type`` is ``"xla"``, so the
converted script stops at its first call. Reported at the ``raise``, and by XLA118 at the
script's calls when the function is in another module of the project. No fix: what the XLA
branch does (or whether the call is needed at all) is the author's choice.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ..base import Finding, Severity

DEVICE_KINDS = frozenset({"cuda", "mps", "cpu", "xpu", "npu", "hpu"})
MANUAL = (
    'give the dispatch an XLA branch (`"xla" in str(device)` / `device.type == "xla"`: '
    "torch_xla.core.xla_model.get_memory_info(device) for memory figures), or skip the call "
    "on XLA"
)


def device_kind_raises(model: ScriptModel, code: str) -> Iterator[Finding]:
    if "raise" not in model.source:
        return
    for node in model.nodes_of(ast.If):
        assert isinstance(node, ast.If)
        parent = model.parent(node)
        if isinstance(parent, ast.If) and parent.orelse == [node]:
            continue  # an ``elif`` of a chain read from its top
        kinds: list[str] = []
        chain: ast.If = node
        while True:
            kind = _kind_tested(chain.test)
            if kind is None:
                break
            kinds.append(kind)
            if len(chain.orelse) == 1 and isinstance(chain.orelse[0], ast.If):
                chain = chain.orelse[0]
                continue
            break
        if not kinds or "xla" in kinds or _kind_tested(chain.test) is None:
            continue
        raised = next((s for s in chain.orelse if isinstance(s, ast.Raise)), None)
        if raised is None:
            continue
        listed = "/".join(dict.fromkeys(kinds))
        yield Finding(
            code,
            f"this dispatch on the device's kind (line {line_ref(node.lineno)}) knows "
            f'{listed} only and raises for any other: on XLA the device is "xla:0" '
            '(its type "xla"), so it raises there',
            # At the exception's call: XLA118 names calls a helper runs, not statements.
            model.span(raised.exc if isinstance(raised.exc, ast.Call) else raised),
            Severity.WARNING,
            manual=MANUAL,
        )


def _kind_tested(test: ast.expr) -> str | None:
    """``"cuda" in dev``, ``dev == "cuda"``, ``device.type == "mps"``, ``dev.startswith("cpu")``
    of something named like a device: the kind it asks about."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        sides = (test.left, test.comparators[0])
        if isinstance(test.ops[0], ast.In | ast.Eq):
            kind = next((_kind(s) for s in sides if _kind(s)), None)
            other = next((s for s in sides if not isinstance(s, ast.Constant)), None)
            if kind is not None and other is not None and _names_a_device(other):
                return kind
        return None
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Attribute)
        and test.func.attr == "startswith"
        and len(test.args) == 1
        and _names_a_device(test.func.value)
    ):
        return _kind(test.args[0])
    return None


def _kind(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        value = node.value.split(":")[0]
        return value if value in DEVICE_KINDS | {"xla"} else None
    return None


def _names_a_device(node: ast.expr) -> bool:
    text = ast.unparse(node).lower()
    return "dev" in text or text.endswith(".type")
