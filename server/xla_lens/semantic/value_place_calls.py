"""The call half of ``value_places.Places``: where a call's result lives.

A ``torch`` constructor lives where its ``device=`` says (no device, ``None`` or ``"cpu"``: the
host, unless the script sets a default device or the call is inside ``with torch.device(d):``);
``torch.tensor(data)`` / ``torch.as_tensor(data)`` where its data lives (a list of numbers: the
host). ``t.to(x)`` moves ``t`` where ``x`` lives (a dtype or ``None`` keeps it), ``.cpu()`` to the
host, ``.cuda()`` to the device; ``.item()``, ``.tolist()``, ``.size()`` give Python values; any
other tensor method keeps its receiver's place. A function of the same module runs with its
parameters bound to the call's arguments (``returns``); one out of reach (a library's, a
builtin such as ``max``) computes where its arguments live; ``math``/``random``/``numpy`` and
the process layout give Python values.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .calls import classes
from .host_calls import HOST_CONSTRUCTORS, HOST_FUNCTIONS, LIKE_CONSTRUCTORS, _inside_device_context
from .model import ScriptModel, method_name, receiver
from .node_helpers import keyword
from .value_kinds import CPU, DEV, NUM, UNK, Value, combine, either, kinds

if TYPE_CHECKING:
    from .calls import FunctionNode

MAX_DEPTH = 8  # nested helper calls followed; deeper is UNK
SELF_NAMES = frozenset({"self", "cls"})
# Tensor methods that give Python values.
NUM_METHODS = frozenset(
    {"item", "tolist", "size", "dim", "ndimension", "numel", "nelement", "element_size", "stride"}
    | {
        "get_device",
        "is_floating_point",
        "is_complex",
        "data_ptr",
        "__len__",
        "numpy",
        "keys",
        "format",
    }
)
NUM_BUILTINS = frozenset(
    {"int", "float", "bool", "str", "len", "round", "repr", "format", "range", "isinstance"}
    | {"print", "hasattr", "getattr", "callable", "type", "id", "hash", "divmod", "open"}
)
# Builtins whose result holds (or is one of) their arguments' elements.
CONTAINERS = frozenset({"list", "tuple", "sorted", "reversed", "iter", "next", "set", "dict"})
NUM_MODULES = ("math.", "random.", "numpy.", "time.", "os.", "logging.", "warnings.", "json.")
DEVICE_CALLS = frozenset({"torch_xla.device", "torch_xla.core.xla_model.xla_device"})
MOVED = frozenset({"cuda", "xpu", "npu", "mps"})
TENSOR_DATA = frozenset({"torch.tensor", "torch.as_tensor"})
IGNORED_KEYWORDS = frozenset({"dtype", "non_blocking", "copy", "memory_format", "requires_grad"})


class PlaceCalls:
    model: ScriptModel
    default_device: bool

    if TYPE_CHECKING:

        def value(
            self, expr: ast.AST, fn: ast.AST | None, env: dict[str, Value], depth: int = 0
        ) -> Value: ...

        def call_env(
            self,
            call: ast.Call,
            callee: ast.AST,
            fn: ast.AST | None,
            env: dict[str, Value],
            depth: int,
        ) -> dict[str, Value]: ...

        def _builtin(self, name: ast.Name) -> bool: ...

    def returns(self, fn: FunctionNode, env: dict[str, Value], depth: int) -> Value:
        """Where what ``fn`` returns lives, its parameters bound to ``env``."""
        nodes = list(self.model.walk_scope(fn))
        if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in nodes):
            return frozenset({UNK})  # a generator: what it yields is not followed
        found = [
            self.value(n.value, fn, env, depth)
            for n in nodes
            if isinstance(n, ast.Return) and n.value is not None
        ]
        return either(found) if found else frozenset({NUM})

    def _call(self, call: ast.Call, fn: ast.AST | None, env: dict[str, Value], depth: int) -> Value:
        model = self.model
        func = call.func
        args = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
        given = [*args, *(k.value for k in call.keywords if k.arg not in IGNORED_KEYWORDS)]

        def of(e: ast.AST) -> Value:
            return self.value(e, fn, env, depth)

        qualname = model.call_name(call)
        if qualname is not None:
            return self._library(call, qualname, given, of)
        callee = model.steps.callee(call)
        if callee is not None:
            if depth >= MAX_DEPTH:
                return frozenset({UNK})
            inner = self.call_env(call, callee, fn, env, depth)
            return self.returns(callee, inner, depth + 1)
        if isinstance(func, ast.Name):
            if func.id in classes(model):
                # An object (a module moved later in place by ``net.to(device)``): unknown.
                return frozenset({UNK})
            if self._builtin(func):
                if func.id in NUM_BUILTINS:
                    return frozenset({NUM})
                if func.id in CONTAINERS:
                    return kinds(of(args[0])) if args else frozenset({NUM})
                return combine(of(a) for a in given)  # ``max(a, b)``, ``sum(ts)``, ``abs(t)``
            return combine([of(func), *(of(a) for a in given)])  # a callable value
        name = method_name(call)
        recv = receiver(call)
        if name is None or recv is None:
            return frozenset({UNK})
        if name in NUM_METHODS:
            return frozenset({NUM})
        if name == "cpu":
            return frozenset({CPU})
        if name in MOVED:
            return frozenset({DEV})
        if name == "type":
            return frozenset({UNK})
        held = kinds(of(recv))
        if name == "to":
            return self._moved(held, given, of)
        return held  # a tensor method: where its receiver lives

    def _moved(self, held: frozenset[str], given: list[ast.expr], of) -> frozenset[str]:  # type: ignore[no-untyped-def]
        """``t.to(x)``: where ``x`` lives (a device, a tensor); a dtype (a Python value) keeps
        ``t`` where it is."""
        places = [kinds(of(a)) for a in given]
        places = [p for p in places if p != {NUM}]
        if not places:
            return held
        out: set[str] = set()
        for p in places:
            for k in p:
                out |= held if k == NUM else {k}
        return frozenset(out)

    def _library(self, call: ast.Call, qualname: str, given: list[ast.expr], of) -> Value:  # type: ignore[no-untyped-def]
        if qualname in DEVICE_CALLS:
            return frozenset({DEV})
        if qualname in HOST_FUNCTIONS or qualname.startswith(NUM_MODULES):
            return frozenset({NUM})
        if qualname == "torch.device":
            named = combine(of(a) for a in given)
            return named if named != {NUM} else frozenset({UNK})
        default = UNK if self.default_device or _inside_device_context(self.model, call) else CPU
        if qualname in HOST_CONSTRUCTORS | LIKE_CONSTRUCTORS:
            device = keyword(call, "device")
            if device is not None:
                return frozenset(default if k == NUM else k for k in kinds(of(device.value)))
            if qualname in LIKE_CONSTRUCTORS:
                return kinds(of(call.args[0])) if call.args else frozenset({UNK})
            if qualname in TENSOR_DATA and call.args:
                return combine([frozenset({default}), of(call.args[0])])
            return frozenset({default})
        device = keyword(call, "device")
        if device is not None:
            return frozenset(default if k == NUM else k for k in kinds(of(device.value)))
        if qualname.rpartition(".")[2][:1].isupper():
            # A library class (``torch.nn.Linear(4, 1)``): an object that ``net.to(device)``
            # may move in place later; where its tensors live is not known.
            return frozenset({UNK})
        made = combine(of(a) for a in given)
        if made == {NUM}:  # only Python values: a torch op makes a tensor of its own
            return frozenset({default if qualname.startswith("torch.") else UNK})
        return made
