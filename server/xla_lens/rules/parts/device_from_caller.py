"""Is this module's device chosen by a caller in another file? (XLA102, XLA103)

A trainer module (``class Trainer: __init__(self, model, opt, args): model.to(args.device)``)
places tensors on whatever device its caller hands in. Rewriting its CUDA autocast to
``"xla"`` and dropping its GradScaler is right only when that caller runs it on the XLA
device: a caller that still runs it on CUDA would silently lose fp16 autocast and loss
scaling. So when every device this module places on comes from a parameter or an attribute
(no device choice of its own: XLA101 reports nothing here and nothing names the XLA device),
the callers are looked for in this file and in the workspace (``workspace_callers``, read from
disk, never run): called here, the whole script is converted in one file; called from modules
that all already pick the XLA device, the device is known; otherwise (a caller that still
picks CUDA or picks nothing we can see, or no caller found) the fixes need review.
"""

from __future__ import annotations

import ast
import os

from ...semantic.device_intent import runs_on_cuda, uses_xla_device
from ...semantic.diskread import read_regular
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, method_name
from ...semantic.params import parameter_of
from ...semantic.workspace import MAX_BYTES
from ...semantic.workspace_callers import CallerModule, workspace_callers
from ...semantic.workspace_classes import ClassRef, chain, class_reference, script_module
from ..base import Target
from ..xla101_cuda_device import check as device_check
from .final_fixes import final_findings
from .library_autocast import display_path

SELF_NAMES = frozenset({"self", "cls"})


def device_from_caller(model: ScriptModel, target: Target) -> str | None:
    """Why the module's tensors may stay on CUDA under a caller elsewhere (the review reason,
    naming where the device comes from), or None when the device is this file's choice or
    known to be the XLA device."""
    return model.memo(("device from caller", target), lambda: _reason(model, target))


def _reason(model: ScriptModel, target: Target) -> str | None:
    if uses_xla_device(model) or final_findings(model, "XLA101", device_check, target):
        return None  # the file picks the device itself (device_held judges XLA101's fixes)
    site = _handed_in_device(model)
    if site is None:
        return None
    expr, owner = site
    shown = f"`{model.segment(expr)}` (line {line_ref(expr.lineno)})"
    if _called_here(model, owner):
        return None  # the whole script is in this file: its device is converted with it
    inherited = _inherited_setting(model, expr, owner)
    if inherited == "":
        return None  # the base class that sets it already picks the XLA device
    if inherited is not None:
        return (
            f"the device comes from {shown}, set by {inherited}, which this file does not "
            "convert (XLA118): run on CUDA there, the XLA autocast would be off and fp16 would "
            "lose its loss scaling; convert that file first"
        )
    callers = workspace_callers(model, owner)
    if not callers:
        base = _unread_base(model, expr, owner)
        setter = (
            f"set by {owner}'s base class `{base}`, whose module is not found beside this file, "
            f"or by a caller of {owner}() that is not in this file"
            if base is not None
            else f"set by a caller of {owner}() that is not in this file"
        )
        return (
            f"the device comes from {shown}, {setter} (no caller found in its folder): run on "
            "CUDA there, the XLA autocast would be off and fp16 would lose its loss scaling"
        )
    for caller in callers:
        if not _picks_xla(caller):
            where = f"{_shown_path(model, caller)}:{caller.lines[0]}"
            return (
                f"the device comes from {shown}, set by the caller of {owner}() at {where}, "
                "which still picks a CUDA (or unknown) device: run on CUDA there, the XLA "
                "autocast would be off and fp16 would lose its loss scaling; convert that "
                "caller first"
            )
    return None


def _handed_in_device(model: ScriptModel) -> tuple[ast.expr, str] | None:
    """The first device a placement uses (``.to(x)``, ``device=x``) that is an attribute of
    ``self`` or a parameter of its function, with the class (or module-level function) whose
    caller hands it in."""
    for call in model.calls:
        exprs: list[ast.expr] = []
        if method_name(call) == "to" and call.args:
            exprs.append(call.args[0])
        exprs += [kw.value for kw in call.keywords if kw.arg == "device"]
        for expr in exprs:
            owner = _owner(model, expr)
            if owner is not None:
                return expr, owner
    return None


def _owner(model: ScriptModel, expr: ast.expr) -> str | None:
    root = expr
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name) or not _device_like(expr):
        return None
    fn = model.enclosing_function(expr)
    if fn is None:
        return None
    if root.id not in SELF_NAMES and parameter_of(model, root) is None:
        return None
    outer = fn
    while True:
        parent = model.parent(outer)
        if isinstance(parent, ast.ClassDef):
            return parent.name if model.is_module_level(parent) else None
        enclosing = model.enclosing_function(outer)
        if enclosing is None:
            return outer.name if model.is_module_level(outer) else None
        outer = enclosing


def _inherited_setting(model: ScriptModel, expr: ast.expr, owner: str) -> str | None:
    """``self.device`` that only a workspace base class of ``owner`` assigns (Informer2020's
    ``Exp_Basic.__init__``, held-out 39): where, as "Base.method in path (line n)"; "" when
    that base's file already picks the XLA device."""
    if not (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id in SELF_NAMES
    ):
        return None
    module = script_module(model)
    node = module.classes.get(owner)
    if node is None:
        return None
    classes = chain(ClassRef(module.path, node, module))
    for cls in classes:
        site = _assigns_attribute(cls.node, expr.attr)
        if site is None:
            continue
        if cls.node is node or cls.path == module.path:
            return None  # set in this file: its own rules read it
        if _module_picks_xla(cls.path):
            return ""  # converted there: the device is known
        method, line = site
        where = display_path(model.path, cls.path)
        return f"{cls.name}.{method} in {where} (line {line})"
    return None


LIBRARY_ROOTS = frozenset(
    {"torch", "torchvision", "transformers", "lightning", "pytorch_lightning"}
)


def _unread_base(model: ScriptModel, expr: ast.expr, owner: str) -> str | None:
    """``self.device`` read by a class that does not set it and inherits from a class imported
    from a module xla-lens cannot read (Informer's ``Exp_Basic`` when ``exp/`` is not beside the
    script, held-out 166): the base as written, the likelier setter."""
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
        return None
    node = script_module(model).classes.get(owner)
    if node is None or _assigns_attribute(node, expr.attr) is not None:
        return None
    for base in node.bases:
        name = model.qualname(base)
        if name is None or name.split(".")[0] in LIBRARY_ROOTS or "." not in name:
            continue
        if class_reference(script_module(model), base) is None:
            return model.segment(base)
    return None


def _assigns_attribute(cls: ast.ClassDef, attr: str) -> tuple[str, int] | None:
    for stmt in cls.body:
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for n in ast.walk(stmt):
            targets = n.targets if isinstance(n, ast.Assign) else []
            if isinstance(n, ast.AnnAssign | ast.AugAssign):
                targets = [n.target]
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and t.attr == attr
                    and isinstance(t.value, ast.Name)
                    and t.value.id in SELF_NAMES
                ):
                    return stmt.name, n.lineno
    return None


def _device_like(expr: ast.expr) -> bool:
    """Named as a device (``args.device``, ``self.gpu``, ``local_rank``): ``.to(self.dtype)``
    casts and is no device."""
    text = ast.unparse(expr).lower()
    return any(word in text for word in ("dev", "gpu", "rank"))


def _called_here(model: ScriptModel, owner: str) -> bool:
    return any(isinstance(c.func, ast.Name) and c.func.id == owner for c in model.calls)


def _picks_xla(caller: CallerModule) -> bool:
    return _module_picks_xla(caller.path)


def _module_picks_xla(path: str | os.PathLike[str]) -> bool:
    """The module, as it is on disk, names the XLA device and no CUDA one."""
    try:
        text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
        tree = ast.parse(text, filename=str(path))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    other = ScriptModel(text, tree, str(path))
    return uses_xla_device(other) and not runs_on_cuda(other)


def _shown_path(model: ScriptModel, caller: CallerModule) -> str:
    try:
        return os.path.relpath(caller.path, os.path.dirname(os.path.abspath(model.path)))
    except ValueError:
        return str(caller.path)
