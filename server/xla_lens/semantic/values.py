"""Def-use of device values: does every use of a device still work if its value changes?

A conversion replaces ``"cuda"`` (a str) or ``torch.device("cuda")`` by the XLA device. That
is meaning-preserving only when every place the value reaches accepts a device: ``.to(x)``,
``device=x``, ``torch.device(x)``, ``map_location=x``, a message. Other uses read it as a
string (``"cuda" in device``, ``device.startswith("cuda")``, ``device == "cuda"``,
``torch.autocast(device_type=device)``) and then crash or silently take another branch.

``DeviceFlow(model).uses_of_expr(node)`` follows the value of ``node`` through assignments
to local names, module globals read in functions, ``self.<attr>`` across a class's methods,
argparse options (``args.<dest>``), function returns (to their call sites) and arguments of
calls to this script's functions (into their parameters). What it cannot follow is reported
as an unknown use: a fix is safe only if no use is a string use or unknown.
"""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from . import calls, device_refusals
from .checkpoint_loads import cuda_device_text, other_use
from .handed_optimizers import stranding_reason
from .line_refs import line_ref
from .model import SCOPE_TYPES, ScriptModel, const_str, keyword, method_name
from .storage_movers import in_storage_mover

DEVICE_KEYWORDS = frozenset({"device", "map_location", "device_map", "output_device"})
STRING_KEYWORDS = frozenset({"device_type"})
STRING_METHODS = frozenset(
    {
        "startswith",
        "endswith",
        "split",
        "rsplit",
        "replace",
        "lower",
        "upper",
        "strip",
        "lstrip",
        "rstrip",
        "format",
        "find",
        "partition",
        "rpartition",
        "join",
        "encode",
        "index",
        "count",
    }
)
# Functions whose device argument must be a device-type string.
STRING_CALLS = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.amp.GradScaler",
        "torch.GradScaler",
        "torch.cuda.amp.autocast",
        "torch.get_autocast_dtype",
        "torch.is_autocast_available",
    }
)
DISPLAY_FUNCTIONS = frozenset({"print", "repr", "str"})


def _formatted_for_display(model: ScriptModel, call: ast.Call) -> bool:
    """``logger.info("device: {} n_gpu: {}".format(device, n_gpu))`` (held-out 157's TinyBERT
    scripts): a literal's ``.format`` whose text goes straight to a print or a log call."""
    if not (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "format"
        and isinstance(call.func.value, ast.Constant)
        and isinstance(call.func.value.value, str)
    ):
        return False
    shown = model.parent(call)
    return (
        isinstance(shown, ast.Call)
        and call in shown.args
        and (
            (isinstance(shown.func, ast.Name) and shown.func.id == "print")
            or (isinstance(shown.func, ast.Attribute) and shown.func.attr in DISPLAY_METHODS)
        )
    )


DISPLAY_METHODS = frozenset(
    {"info", "debug", "warning", "warn", "error", "critical", "log", "write", "set_description"}
)
# Libraries whose functions take a device where they take one at all.
DEVICE_LIBRARIES = ("torch.", "torchvision.", "torchaudio.", "torchtext.")
MAX_DEPTH = 4
NO_XLA_LOAD = "torch.load cannot restore a checkpoint onto the XLA device"


@dataclass(frozen=True)
class Use:
    node: ast.AST
    ok: bool
    # Why this use needs the original value (empty when ``ok``).
    why: str = ""


def _scope(model: ScriptModel, node: ast.AST) -> ast.AST:
    for a in model.ancestors(node):
        if isinstance(a, SCOPE_TYPES):
            return a
    return model.tree


def _local_names(model: ScriptModel, scope: ast.AST) -> set[str]:
    """Names local to function ``scope``: parameters and assigned names, less ``global``s."""
    names: set[str] = set()
    declared: set[str] = set()
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        a = scope.args
        for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
            if p is not None:
                names.add(p.arg)
    for n in model.walk_scope(scope):
        if isinstance(n, ast.Global | ast.Nonlocal):
            declared.update(n.names)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
    return names - declared


class DeviceFlow:
    """Uses of device values in one script (cached per name and scope)."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self._names: dict[str, list[ast.Name]] = {}
        for n in model.nodes_of(ast.Name):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self._names.setdefault(n.id, []).append(n)
        self._lines: dict[str, list[int]] = {}
        self._locals: dict[int, set[str]] = {}
        self._scopes: dict[int, ast.AST] = {}
        self._attrs: dict[str, list[ast.Attribute]] = {}
        for a in model.nodes_of(ast.Attribute):
            if isinstance(a, ast.Attribute) and isinstance(a.ctx, ast.Load):
                self._attrs.setdefault(a.attr, []).append(a)

    # --- entry points --------------------------------------------------------------
    def uses_of_expr(self, node: ast.AST, depth: int = MAX_DEPTH) -> list[Use]:
        return self._classify(node, depth, set())

    def bad_uses(self, node: ast.AST) -> list[Use]:
        return [u for u in self.uses_of_expr(node) if not u.ok]

    def uses_of_name(self, name: str, scope: ast.AST) -> list[Use]:
        return self._name_uses(name, scope, MAX_DEPTH, set())

    def uses_of_attribute(self, cls: ast.ClassDef, attr: str) -> list[Use]:
        return self._attr_uses(cls, attr, MAX_DEPTH, set())

    def uses_of_option(self, dest: str) -> list[Use]:
        return self._option_uses(dest, MAX_DEPTH, set())

    def describe(self, uses: list[Use], limit: int = 3) -> str:
        parts = []
        for u in uses[:limit]:
            stmt = self.model.enclosing_statement(u.node) or u.node
            line = getattr(stmt, "lineno", 0)
            text = self.model.line_text(line - 1).strip()
            parts.append(f"line {line_ref(line)} `{text[:60]}` ({u.why})")
        more = f" and {len(uses) - limit} more" if len(uses) > limit else ""
        return "; ".join(parts) + more

    # --- bindings ------------------------------------------------------------------
    def _name_uses(self, name: str, scope: ast.AST, depth: int, seen: set) -> list[Use]:
        key = ("name", name, id(scope))
        if key in seen:
            return []
        seen.add(key)
        out: list[Use] = []
        module = scope is self.model.tree
        if not module:
            # Reads in ``scope`` or in a frame nested in it lie within its lines (its own
            # decorators included): a cheap test before the scope and ancestor walks.
            first = min([scope.lineno] + [d.lineno for d in getattr(scope, "decorator_list", ())])  # type: ignore[attr-defined]
            last = getattr(scope, "end_lineno", None) or scope.lineno  # type: ignore[attr-defined]
        names = self._names.get(name, [])
        if not module:
            # The reads are in source order: only those within the scope's lines (a scan of
            # every read of a common name per scope was quadratic on big files).
            lines = self._name_lines(name)
            names = names[bisect_left(lines, first) : bisect_right(lines, last)]
        for n in names:
            s = self._scope_of(n)
            if s is scope:
                pass
            elif module or self._nested_in(s, scope):
                # A global read in a function (or a closure variable) unless rebound there.
                if name in self._local_names(s):
                    continue
            else:
                continue
            out.extend(self._classify(n, depth, seen))
        return out

    def _name_lines(self, name: str) -> list[int]:
        found = self._lines.get(name)
        if found is None:
            found = self._lines[name] = [n.lineno for n in self._names.get(name, [])]
        return found

    def _scope_of(self, node: ast.AST) -> ast.AST:
        # Every device name asks about every occurrence of its name: remember each scope.
        found = self._scopes.get(id(node))
        if found is None:
            found = self._scopes[id(node)] = _scope(self.model, node)
        return found

    def _local_names(self, scope: ast.AST) -> set[str]:
        found = self._locals.get(id(scope))
        if found is None:
            found = self._locals[id(scope)] = _local_names(self.model, scope)
        return found

    def _nested_in(self, inner: ast.AST, outer: ast.AST) -> bool:
        return any(a is outer for a in self.model.ancestors(inner))

    def _attr_uses(self, cls: ast.ClassDef, attr: str, depth: int, seen: set) -> list[Use]:
        key = ("attr", attr, id(cls))
        if key in seen:
            return []
        seen.add(key)
        out: list[Use] = []
        for a in self._attrs.get(attr, []):
            if isinstance(a.value, ast.Name) and a.value.id == "self":
                if calls.enclosing_class(self.model, a) is cls:
                    out.extend(self._classify(a, depth, seen))
        return out

    def _option_uses(self, dest: str, depth: int, seen: set) -> list[Use]:
        key = ("option", dest)
        if key in seen:
            return []
        seen.add(key)
        out: list[Use] = []
        for a in self._attrs.get(dest, []):
            receiver = a.value
            if (
                isinstance(receiver, ast.Name)
                and receiver.id != "self"
                and receiver.id not in self.model.imports
            ):
                out.extend(self._classify(a, depth, seen))
        return out

    def _store_uses(self, target: ast.AST, depth: int, seen: set) -> list[Use]:
        if isinstance(target, ast.Name):
            return self._name_uses(target.id, _scope(self.model, target), depth, seen)
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            cls = calls.enclosing_class(self.model, target)
            if cls is not None:
                return self._attr_uses(cls, target.attr, depth, seen)
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            return self._option_uses(target.attr, depth, seen)
        return [Use(target, False, "stored where it cannot be followed")]

    # --- one occurrence --------------------------------------------------------------
    def _classify(self, node: ast.AST, depth: int, seen: set) -> list[Use]:
        model = self.model
        p = model.parent(node)
        if depth <= 0:
            # Out of budget, a read that places something right here is still judged:
            # ``.to(device=self.device)`` at the end of a long chain (held-out 27, YOLOv4's
            # loss class handed the device through train() and __init__).
            if self._places_here(node, p):
                return [Use(node, True)]
            return [Use(node, False, "flows too far to follow")]
        if isinstance(p, ast.Call):
            if node is p.func:
                return [Use(node, False, "called")]
            if node in p.args:
                return self._call_argument(p, p.args.index(node), None, node, depth, seen)
            return [Use(node, False, "unpacked into a call")]
        if isinstance(p, ast.keyword):
            call = model.parent(p)
            if p.arg is None or not isinstance(call, ast.Call):
                return [Use(node, False, "passed as **kwargs")]
            return self._call_argument(call, None, p.arg, node, depth, seen)
        if isinstance(p, ast.Compare):
            if all(isinstance(op, ast.Is | ast.IsNot) for op in p.ops):
                return [Use(node, True)]
            strings = any(
                isinstance(c, ast.Constant) and isinstance(c.value, str)
                for c in (p.left, *p.comparators)
            )
            return [Use(node, False, "compared as a string" if strings else "compared by value")]
        if isinstance(p, ast.Attribute) and p.value is node:
            if p.attr == "type":
                return [self._type_use(node, p)]
            if p.attr in STRING_METHODS:
                return [Use(node, False, f"str method .{p.attr}")]
            return [Use(node, False, f"reads .{p.attr}")]
        if isinstance(p, ast.FormattedValue):
            if self._in_display(p):
                return [Use(node, True)]
            return [Use(node, False, "formatted into a string")]
        if isinstance(p, ast.IfExp | ast.BoolOp | ast.NamedExpr) and node is not getattr(
            p, "test", None
        ):
            return self._classify(p, depth, seen)
        if isinstance(p, ast.Assign | ast.AnnAssign) and p.value is node:
            targets = p.targets if isinstance(p, ast.Assign) else [p.target]
            out: list[Use] = []
            for t in targets:
                out.extend(self._store_uses(t, depth - 1, seen))
            return out
        if isinstance(p, ast.Return):
            fn = model.enclosing_function(p)
            if fn is None:
                return [Use(node, False, "returned")]
            return self._result_uses(fn, depth - 1, seen)
        if isinstance(p, ast.Expr):
            return [Use(node, True)]
        if isinstance(p, ast.withitem) and p.context_expr is node and p.optional_vars is None:
            return [Use(node, True)]  # ``with torch.device(d):`` makes d the default device
        if isinstance(p, ast.BinOp):
            return [Use(node, False, "used in an expression")]
        if isinstance(p, ast.Subscript):
            return [Use(node, False, "indexed")]
        return [Use(node, False, f"used in a {type(p).__name__}")]

    def _autocast_gate(self, compare: ast.Compare) -> bool:
        """``compare`` is (part of) the ``enabled=`` of a CUDA autocast call."""
        for a in self.model.ancestors(compare):
            if isinstance(a, ast.keyword):
                call = self.model.parent(a)
                return (
                    a.arg == "enabled"
                    and isinstance(call, ast.Call)
                    and (self.model.call_name(call) or "").endswith("autocast")
                )
            if not isinstance(a, ast.BoolOp | ast.UnaryOp | ast.Compare):
                return False
        return False

    def _type_use(self, node: ast.AST, attr: ast.Attribute) -> Use:
        """``device.type == "cuda"`` (or ``in ("cuda", "mps")``) decides differently once the
        device is XLA; against ``"cpu"`` it decides as on a CUDA host."""
        p = self.model.parent(attr)
        if isinstance(p, ast.Compare) and not all(isinstance(o, ast.Is | ast.IsNot) for o in p.ops):
            others = [c for c in (p.left, *p.comparators) if c is not attr]
            names = [
                const_str(e)
                for c in others
                for e in (c.elts if isinstance(c, ast.Tuple | ast.List | ast.Set) else [c])
            ]
            other = next((n for n in names if n != "cpu"), "cpu")
            if other == "cuda" and self._autocast_gate(p):
                # ``autocast(enabled=device.type == "cuda")``: XLA102's fix reads it as "xla"
                # with the autocast it rewrites (held-out 137); until then the CUDA autocast is
                # a no-op on XLA tensors whichever way the gate decides.
                return Use(node, True)
            if other != "cpu":
                shown = f'"{other}"' if other is not None else "a value"
                return Use(node, False, f".type compared with {shown}: decides otherwise on XLA")
        if isinstance(p, ast.keyword) and p.arg == "map_location":
            load = self.model.parent(p)
            if isinstance(load, ast.Call) and self.model.call_name(load) == "torch.load":
                # ``map_location=args.device.type``: "xla", which torch.load cannot restore
                # onto (SimCLR's --reload, held-out 51); fine where XLA115 loads on the CPU.
                use = other_use(self.model, load)
                if use is None and cuda_device_text(self.model, attr):
                    return Use(node, True)
                why = f", and it is used other than through load_state_dict ({use})" if use else ""
                return Use(
                    node,
                    False,
                    NO_XLA_LOAD + (why or ': load it on the CPU (map_location="cpu")'),
                )
        return Use(node, True)

    def _in_display(self, node: ast.AST) -> bool:
        for a in self.model.ancestors(node):
            if isinstance(a, ast.Call):
                if isinstance(a.func, ast.Name) and a.func.id in DISPLAY_FUNCTIONS:
                    return True
                if method_name(a) in DISPLAY_METHODS:
                    return True
                return False
            if isinstance(a, ast.stmt):
                return False
        return False

    def _call_argument(
        self,
        call: ast.Call,
        index: int | None,
        kw: str | None,
        node: ast.AST,
        depth: int,
        seen: set,
    ) -> list[Use]:
        model = self.model
        name = model.call_name(call)
        meth = method_name(call)
        if name in STRING_CALLS or kw in STRING_KEYWORDS:
            return [Use(node, False, "needs a device-type string")]
        refused = device_refusals.refusal(name, meth)
        if refused:
            return [Use(node, False, refused)]
        if kw == "map_location" and name != "torch.load":
            # ``trainer.load_checkpoint(path, map_location=device)`` (held-out 61's ddpm-torch):
            # a loader's map_location, most likely handed on to torch.load.
            callee = model.segment(call.func)
            return [Use(node, False, f"{NO_XLA_LOAD} (passed as map_location to {callee}())")]
        if name == "torch.load" and (kw == "map_location" or (kw is None and index == 1)):
            # torch.load cannot restore onto the XLA device (RuntimeError, measured): fine only
            # where XLA115 loads on the CPU by a safe fix (a CUDA map_location it follows, the
            # checkpoint going through load_state_dict only).
            location = keyword(call, "map_location")
            value = location.value if location is not None else call.args[1]
            use = other_use(model, call)
            if use is None and cuda_device_text(model, value):
                return [Use(node, True)]
            why = f"it is used other than through load_state_dict ({use})" if use else ""
            return [
                Use(
                    node,
                    False,
                    NO_XLA_LOAD
                    + (f", and {why}" if why else ': load it on the CPU (map_location="cpu")'),
                )
            ]
        if name == "torch.device" and call.args and call.args[0] is node and depth > 0:
            # ``device = torch.device(args.device)``: the device object's own uses decide
            # (a torch.load map_location among them cannot take the XLA device).
            refused = [
                u for u in self._classify(call, depth - 1, seen) if u.why.startswith(NO_XLA_LOAD)
            ]
            return refused or [Use(node, True)]
        if meth in {"to", "cuda"} and call.args and call.args[0] is node:
            if in_storage_mover(model, call):
                # ``map_location=lambda storage, loc: storage.cuda(device_id)`` (held-out 79,
                # BasicSR): XLA101 leaves the storage's move to XLA115, so it keeps its
                # ``.cuda(...)``, which takes a CUDA index, never the XLA device (TypeError).
                return [Use(node, False, f"{NO_XLA_LOAD} (moved onto in its map_location)")]
            stranded = stranding_reason(model, call)
            if stranded:
                return [Use(node, False, stranded)]
        if meth in {"to", "cuda", "type"} or name == "torch.device":
            return [Use(node, True)]
        if name is not None and name.startswith("torch.cuda."):
            return [Use(node, False, f"passed to {name} (CUDA only)")]
        # This script's own functions are followed even for ``device=``: the parameter
        # may be used as a string inside.
        target = calls.callee(model, call)
        if target is not None:
            fn, bound = target
            param = calls.parameter_for(fn, bound, index, kw)
            if param is None:
                return [Use(node, False, f"passed to {fn.name}() as *args/**kwargs")]
            return self._name_uses(param, fn, depth - 1, seen)
        if kw in DEVICE_KEYWORDS:
            return [Use(node, True)]
        if isinstance(call.func, ast.Name) and call.func.id in DISPLAY_FUNCTIONS:
            text = model.parent(call)
            if (
                isinstance(text, ast.Compare)
                and not all(isinstance(op, ast.Is | ast.IsNot) for op in text.ops)
            ) or (
                isinstance(text, ast.Attribute)
                and text.value is call
                and text.attr in STRING_METHODS
            ):
                # ``if 'cuda' in str(device):`` (held-out 60's audioset trainer): a test of its
                # text, which is "xla:0" after the fix; the script decides otherwise there.
                return [Use(node, False, f"its {call.func.id}() text is tested")]
            return [Use(node, True)]
        if meth in DISPLAY_METHODS or _formatted_for_display(model, call):
            return [Use(node, True)]
        if name is not None and name.startswith(DEVICE_LIBRARIES):
            return [Use(node, True)]
        callee_text = model.segment(call.func)
        return [Use(node, False, f"passed to {callee_text}(), not followed")]

    def _places_here(self, node: ast.AST, p: ast.AST | None) -> bool:
        """``x.to(node)``, ``x.to(device=node)``, ``torch.device(node)``: a placement use that
        needs no further following."""
        call = self.model.parent(p) if isinstance(p, ast.keyword) else p
        if not isinstance(call, ast.Call) or node is call.func:
            return False
        if isinstance(p, ast.keyword) and p.arg != "device":
            return False
        return method_name(call) == "to" or self.model.call_name(call) == "torch.device"

    def _result_uses(self, fn: ast.AST, depth: int, seen: set) -> list[Use]:
        key = ("result", id(fn))
        if key in seen:
            return []
        seen.add(key)
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        out: list[Use] = []
        for call in self.model.calls:
            target = calls.callee(self.model, call)
            if target is not None and target[0] is fn:
                out.extend(self._classify(call, depth, seen))
        return out


def option_dest(call: ast.Call) -> str | None:
    """The attribute an ``add_argument("--device-type", ...)`` option is stored in."""
    dest = next((k for k in call.keywords if k.arg == "dest"), None)
    if dest is not None:
        return const_str(dest.value)
    names = [const_str(a) for a in call.args]
    longs = [n for n in names if n and n.startswith("--")]
    chosen = longs[0] if longs else next((n for n in names if n), None)
    if chosen is None:
        return None
    return chosen.lstrip("-").replace("-", "_")
