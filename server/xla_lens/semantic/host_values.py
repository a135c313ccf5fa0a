"""Which tensor-looking values are provably not pending device tensors at the line that reads
them, refining ``TensorNames`` (which judges a name once for its whole scope) for XLA401/XLA404.

Three facts, each provable from the script alone:

- Flow (``reaching.py``): the bindings of a name that can reach a read in the same pass.
  ``loss_avg = meter.avg`` in the loop is a float there, whatever a
  ``torch.tensor(loss_avg, device=d)`` after the loop makes of the name.
- Host tensors: ``torch.zeros(n)`` (``ones``/``empty``/``full``/``tensor``..., no device or
  ``device='cpu'``, and no default device set by the script) is a CPU tensor; filled with
  Python numbers (``t[k] = loss.item()``) anything computed from it stays on the host. A
  function of the script whose every ``return`` is such a value (a dict of their means) returns
  host values. Entries of a ``torch.load`` result are loaded data, not a pending computation.
  Which calls give host values is ``host_calls.HostCalls``, the mixin this class extends.
- Syncs: right after the script's own ``torch_xla.sync()`` / ``xm.mark_step()``, a tensor the
  step computed holds its value; reading it as it is (no op on it in between) runs no graph.

A running-average object fed a device tensor (``meter.update(loss)``) holds tensors: its
attributes (``meter.avg``) are device values.
"""

from __future__ import annotations

import ast

from .assigned_values import is_shape_number
from .batch_placement import stays_on_cpu
from .binding_sets import frame_values, global_values, name_and_attribute_stores
from .host_calls import DEFAULT_DEVICE_SETTERS, MOVES, HostCalls
from .loaders import legacy_data_parallel_step_index
from .loop_frames import counts
from .model import ScriptModel, method_name, receiver
from .node_helpers import dotted, is_group_setting, keyword
from .number_attributes import number_attribute
from .params import binds_parameter, handed_values, parameter_of
from .reaching import (
    UNKNOWN,
    arguments,
    binding_entries,
    binds_whole,
    bound_by_comprehension,
    bound_value,
    walk_back,
    whole_bindings,
)
from .step_intervals import step_interval
from .tensors import CONVENTIONAL, TensorNames, scope_of
from .unpacked_returns import enclosing_frame_entries, returned_elements, unpacked_from_call

# Calls that make the pending graph of every live tensor run (a statement of their own).
SYNCS = frozenset({"torch_xla.sync", "torch_xla.core.xla_model.mark_step"})
STEP_CONTEXTS = frozenset({"torch_xla.step"})
OPTIMIZER_STEP = "torch_xla.core.xla_model.optimizer_step"
MAX_DEPTH = 6


LENGTH_NAMES = frozenset({"bsz", "ntokens", "n_tokens", "num_tokens", "seqlen"})


# Process counts and indices of the distributed frameworks: Python ints.
PROCESS_COUNTS = frozenset(
    {"num_processes", "process_index", "local_process_index", "world_size", "num_replicas"}
)


def is_length_name(name: str) -> bool:
    return name in LENGTH_NAMES or (name.endswith("_len") and not name.startswith("_"))


def host_values(model: ScriptModel) -> HostValues:
    """The per-parse ``HostValues`` of ``model`` (shared by XLA401 and XLA404)."""
    return model.memo(HostValues, lambda: HostValues(model))


def _is_conventional(name: str) -> bool:
    return name in CONVENTIONAL or name.endswith(("_loss", "_logits"))


# ``HfArgumentParser`` and its subclasses (``ArgumentParserPlus``, TRL's ``TrlParser`` is one).
DATACLASS_PARSERS = ("HfArgumentParser", "ArgumentParserPlus", "TrlParser")
DATACLASS_PARSES = frozenset(
    {"parse", "parse_args_into_dataclasses", "parse_yaml_file", "parse_json_file", "parse_dict"}
)


class HostValues(HostCalls):
    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self.tensors = TensorNames(model)
        self._host_fns: dict[ast.AST, bool] = {}
        self._reaching: dict[ast.Name, list[ast.expr] | None] = {}
        self._fed: dict[tuple[ast.AST, str], bool] = {}
        self._assumed: frozenset[str] = frozenset()  # parameters taken as Python values
        self._asking: set[int] = set()  # bindings whose host question is open
        self._default_device = next(model.calls_to(*DEFAULT_DEVICE_SETTERS), None) is not None
        self._globals = {
            n
            for g in model.nodes_of(ast.Global)
            for n in g.names  # type: ignore[attr-defined]
        } | {n for g in model.nodes_of(ast.Nonlocal) for n in g.names}  # type: ignore[attr-defined]

    # --- the questions the rules ask ------------------------------------------------------
    def is_device(self, expr: ast.AST, depth: int = 0) -> bool:
        """``TensorNames.is_tensor`` where the value may be a pending device tensor here."""
        if depth > MAX_DEPTH:
            return self.tensors.is_tensor(expr)
        deeper = depth + 1
        if isinstance(expr, ast.Attribute) and self._fed_device(expr.value, deeper):
            return True
        if not self.tensors.is_tensor(expr):
            return False
        if isinstance(expr, ast.Call) and self._is_host_call(expr, deeper):
            return False
        if isinstance(expr, ast.Name):
            if self.enumerate_index(expr) or self.counter_at(expr) or self.length_field(expr):
                return False
            if stays_on_cpu(self.model, expr):
                return False
            return not self.host_at(expr, strict=_is_conventional(expr.id), depth=deeper)
        if isinstance(expr, ast.Attribute):
            if dotted(expr) in self.tensors.names_at(expr) or expr.attr == "grad":
                return True  # a parameter's gradient lives where the parameter does
            return self.is_device(expr.value, deeper)
        if isinstance(expr, ast.Subscript):
            return self.is_device(expr.value, deeper)
        if isinstance(expr, ast.Call):
            recv = receiver(expr)
            if recv is None or not self.tensors.is_tensor(recv) or method_name(expr) in MOVES:
                return True
            return self.is_device(recv, deeper) or any(
                self.is_device(a, deeper) for a in arguments(expr)
            )
        if isinstance(expr, ast.BinOp):
            return self.is_device(expr.left, deeper) or self.is_device(expr.right, deeper)
        if isinstance(expr, ast.UnaryOp):
            return self.is_device(expr.operand, deeper)
        if isinstance(expr, ast.BoolOp):
            return any(self.is_device(v, deeper) for v in expr.values)
        if isinstance(expr, ast.Compare):
            return any(self.is_device(v, deeper) for v in [expr.left, *expr.comparators])
        if isinstance(expr, ast.IfExp):
            return self.is_device(expr.body, deeper) or self.is_device(expr.orelse, deeper)
        if isinstance(expr, ast.NamedExpr):
            return self.is_device(expr.value, deeper)
        return True

    def is_host(self, expr: ast.AST, depth: int = 0) -> bool:
        """Whether ``expr`` provably gives a host value: a Python number or string, a CPU
        tensor (or container) holding only such values, or loaded checkpoint data."""
        if depth > MAX_DEPTH:
            return False
        deeper = depth + 1
        if isinstance(expr, ast.Constant | ast.JoinedStr):
            return expr is not UNKNOWN
        if isinstance(expr, ast.Dict):
            return all(self.is_host(v, deeper) for v in expr.values)
        if isinstance(expr, ast.List | ast.Tuple | ast.Set):
            return all(self.is_host(v, deeper) for v in expr.elts)
        if isinstance(expr, ast.Name):
            # ``i`` of ``for i, batch in enumerate(loader)`` (through a progress bar too) is a
            # Python int: yolov5's running mean ``tloss = (tloss * i + loss.item()) / (i + 1)``.
            return (
                self.host_at(expr, strict=True, depth=deeper)
                or self.length_field(expr)
                or self.enumerate_index(expr)
                or stays_on_cpu(self.model, expr)
            )
        if is_group_setting(expr) or is_shape_number(expr):
            return True
        if isinstance(expr, ast.Attribute) and self._parsed_option(expr, deeper):
            return True
        if isinstance(expr, ast.Attribute) and (self.model.qualname(expr) or "").startswith(
            ("math.", "numpy.")
        ):
            return True  # ``best = np.inf``, ``math.pi``: module constants are numbers
        if isinstance(expr, ast.Attribute) and expr.attr in PROCESS_COUNTS:
            # ``accelerator.num_processes`` (held-out 61's fast-DiT divides a loss by it)
            return True
        if number_attribute(self.model, expr):
            return True  # ``self.accumulation_steps`` set from an ``int`` parameter
        if isinstance(expr, ast.Subscript | ast.Attribute):
            return self.is_host(expr.value, deeper)
        if isinstance(expr, ast.BinOp):
            return self.is_host(expr.left, deeper) and self.is_host(expr.right, deeper)
        if isinstance(expr, ast.UnaryOp):
            return self.is_host(expr.operand, deeper)
        if isinstance(expr, ast.BoolOp):
            return all(self.is_host(v, deeper) for v in expr.values)
        if isinstance(expr, ast.Compare):
            return all(self.is_host(v, deeper) for v in [expr.left, *expr.comparators])
        if isinstance(expr, ast.IfExp):
            return self.is_host(expr.body, deeper) and self.is_host(expr.orelse, deeper)
        if isinstance(expr, ast.Call):
            return self._is_host_call(expr, deeper)
        return False

    def host_at(self, name: ast.Name, strict: bool, depth: int = 0) -> bool:
        """Whether every binding of ``name`` that reaches this read gives a host value
        (``strict``) or at least no device tensor (for names ``TensorNames`` judges by their
        bindings, not by their conventional name)."""
        if name.id in self._assumed and parameter_of(self.model, name) is not None:
            return True
        if step_interval(self, name):
            return True
        values = self.reaching(name)
        if not values:
            return False
        # A loop-carried update reads the name it binds (yolov5's running mean ``tloss =
        # (tloss * i + loss.item()) / (i + 1)``): a binding whose own question is already open
        # further up is taken as a host value there, so the answer is "host" exactly when the
        # other bindings (the ``0.0`` before the loop) and every other part of the update are
        # (an induction over the loop's passes). Nothing of this is cached.
        for v in values:
            if id(v) in self._asking:
                continue
            self._asking.add(id(v))
            try:
                ok = self.is_host(v, depth) or (not strict and not self.is_device(v, depth))
            finally:
                self._asking.discard(id(v))
            if not ok:
                return False
        return True

    def host_unless(self, name: ast.Name) -> list[str]:
        """The parameters of the function that alone keep ``name`` from being a host value
        (``v = 0.0; v += loss.item(); v /= n`` with ``n`` a parameter: a float, unless ``n``
        is a tensor); empty when that is not the only doubt."""
        values = self.reaching(name)
        if not values:
            return []
        params = sorted(
            {
                n.id
                for v in values
                for n in ast.walk(v)
                if isinstance(n, ast.Name)
                and _used_as_value(self.model, n)
                and parameter_of(self.model, n) is not None
            }
        )
        if not params:
            return []
        trial = HostValues(self.model)
        trial._assumed = frozenset(params)
        return params if trial.is_host(name) else []

    def materialized(self, expr: ast.AST) -> bool:
        """``loss`` read as it is after a sync that always runs earlier in this pass, with no
        binding or in-place change of ``loss`` in between: its value is already computed."""
        if not isinstance(expr, ast.Name) or expr.id in self._globals:
            return False
        found = walk_back(self.model, expr, expr.id, self._is_sync)
        return found is not None and found[0] is not None and not found[1]

    def counter_at(self, name: ast.Name) -> bool:
        """``step`` read in the body of the ``for step in range(...)`` around it, which the
        body never rebinds: a Python int, whatever else the name is bound to elsewhere in
        its frame (modded-nanogpt's warmup loop over ``step`` before the main one)."""
        child: ast.AST = name
        for a in self.model.ancestors(name):
            if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                return False
            if isinstance(a, ast.For) and isinstance(a.target, ast.Name) and a.target.id == name.id:
                if child not in a.body or not counts(self.model, a):
                    return False
                return not _rebinds(a.body, name.id)
            child = a
        return False

    def length_field(self, name: ast.Name) -> bool:
        """``seq_len`` of ``for i, (data, target, seq_len) in enumerate(eval_iter):``, read in
        that loop's body, which never rebinds it: a batch's length unpacked beside its tensors
        is a Python int (transformer-xl's LM iterators, held-out 24); a DataLoader would make
        it a CPU tensor, still no device value. Only singular length names (``*_len``, ``bsz``):
        ``lengths`` is a tensor of per-example lengths."""
        if not is_length_name(name.id):
            return False
        child: ast.AST = name
        for a in self.model.ancestors(name):
            if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                return False
            if isinstance(a, ast.For | ast.AsyncFor) and child in a.body:
                targets = [n for n in ast.walk(a.target) if isinstance(n, ast.Name)]
                if any(t.id == name.id for t in targets):
                    if isinstance(a.target, ast.Name):
                        return False  # the whole element, not a field beside tensors
                    return not _rebinds(a.body, name.id)
            child = a
        return False

    def enumerate_index(self, name: ast.Name) -> bool:
        """``i`` of ``for i, (x, y) in pbar:`` where every binding of ``pbar`` is an
        ``enumerate(...)``, or a progress bar / ``iter`` over it (``pbar = tqdm(pbar)``): a
        Python int, however the loader's batches are judged."""
        scope = scope_of(self.model, name)
        loops = whole_bindings(self.model, scope, name.id)
        return bool(loops) and all(
            isinstance(node, ast.For | ast.AsyncFor)
            and isinstance(node.target, ast.Tuple)
            and node.target.elts
            and isinstance(node.target.elts[0], ast.Name)
            and node.target.elts[0].id == name.id
            and (
                self._enumerates(node.iter, scope, set())
                # torch_xla's old DataParallel hands its loop function (step, batch) pairs
                or legacy_data_parallel_step_index(self.model, node) == name.id
            )
            for node, _value in loops
        )

    def _enumerates(self, expr: ast.AST, scope: ast.AST, seen: set[str]) -> bool:
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Name) and func.id == "enumerate":
                return self.model.qualname(func) is None and func.id not in self.model.functions
            callee = (self.model.call_name(expr) or dotted(func) or "").split(".")[-1]
            # A progress bar (``tqdm``, yolov5's ``TQDM``) or ``iter`` yields what it wraps.
            wraps = callee == "iter" or callee.lower().endswith("tqdm")
            return wraps and bool(expr.args) and self._enumerates(expr.args[0], scope, seen)
        if isinstance(expr, ast.Name):
            if expr.id in seen:
                return True  # ``pbar = tqdm(pbar)``: its other bindings decide
            values = whole_bindings(self.model, scope, expr.id)
            seen.add(expr.id)
            return bool(values) and all(
                isinstance(node, ast.Assign) and value is not UNKNOWN
                and self._enumerates(value, scope, seen)
                for node, value in values
            )  # fmt: skip
        return False

    # --- reaching bindings -------------------------------------------------------------------
    def reaching(self, name: ast.Name) -> list[ast.expr] | None:
        """Values of the bindings of ``name`` that can reach this read in one pass, or None
        when one of them cannot be judged (a parameter, a ``for`` target, a global)."""
        if name in self._reaching:
            return self._reaching[name]
        values: list[ast.expr] | None = None
        if name.id in self._globals:
            values = global_values(self.model, name.id)
        elif not bound_by_comprehension(self.model, name):
            found = walk_back(self.model, name, name.id, lambda s: binds_whole(s, name.id))
            if found is None:
                found = frame_values(self.model, name)
            if found is not None:
                dominating, values = found
                if dominating is not None:
                    values.append(bound_value(dominating, name.id))
                if not values or any(v is UNKNOWN for v in values):
                    values = None
            if values is None:
                values = self._followed_values(name)
        self._reaching[name] = values
        return values

    def _followed_values(self, name: ast.Name) -> list[ast.expr] | None:
        """Every value the frame binds to ``name``, with what a script function returns for
        the names unpacked from its result; for a name a nested function reads but never
        binds, the enclosing function's (I-JEPA's ``log_stats()`` logging the float
        ``train_step`` returned through ``gpu_timer``). None where one cannot be judged."""
        model = self.model
        frame = scope_of(model, name)
        values: list[ast.expr] = []
        if parameter_of(model, name) is not None or binds_parameter(frame, name.id):
            handed = handed_values(model, frame, name.id)
            if handed is None:
                return None
            values.extend(handed)
        entries = binding_entries(model, frame, name.id) or enclosing_frame_entries(model, name)
        if not entries:
            return values or None
        for node, value, _whole in entries:
            if value is UNKNOWN:
                unpacked = unpacked_from_call(node, name.id)
                found = returned_elements(model, *unpacked) if unpacked is not None else None
                if found is None:
                    return None
                values.extend(found)
            else:
                values.append(value)
        return values

    def _parsed_option(self, expr: ast.Attribute, depth: int) -> bool:
        """``args.log_interval`` where every whole binding of ``args`` is a host
        ``parser.parse_args()`` and every store into ``args.log_interval`` is a host value: the
        script's other stores into ``args`` (``args.work_dir = os.path.join(...)``,
        transformer-xl) do not make this option a tensor."""
        if not isinstance(expr.value, ast.Name):
            return False
        ident, attr = expr.value.id, expr.attr
        index = name_and_attribute_stores(self.model)
        whole = index[0].get(ident, [])
        stores = index[1].get((ident, attr), [])
        return (
            bool(whole)
            and all(
                isinstance(v, ast.Call)
                and (
                    self._parsed_arguments(v)
                    or self._returns_parsed_arguments(v)
                    or self._dataclass_arguments(v)
                )
                for v in whole
            )
            and all(self.is_host(v, depth) for v in stores)
        )

    def _dataclass_arguments(self, call: ast.Call) -> bool:
        """``args = parser.parse()`` / ``parser.parse_args_into_dataclasses()`` of an
        ``HfArgumentParser`` (or a subclass: open-instruct's ``ArgumentParserPlus``, held-out
        39): dataclass fields filled from the command line or a config file, never a device
        tensor."""
        recv = receiver(call)
        if method_name(call) not in DATACLASS_PARSES or not isinstance(recv, ast.Name):
            return False
        return any(
            isinstance(v, ast.Call)
            and (self.model.call_name(v) or dotted(v.func) or "").endswith(DATACLASS_PARSERS)
            for v in self.model.assigned_from(recv.id)
        )

    def _returns_parsed_arguments(self, call: ast.Call) -> bool:
        """``args = parse_args()`` with the script's own ``def parse_args(...)`` returning
        ``parser.parse_args()`` (directly or through a name bound only to it): diffusers'
        and transformers' examples (held-out 37)."""
        if not isinstance(call.func, ast.Name):
            return False
        fn = next(
            (
                s
                for s in self.model.tree.body
                if isinstance(s, ast.FunctionDef) and s.name == call.func.id
            ),
            None,
        )
        if fn is None:
            return False
        returns = [n for n in self.model.walk_scope(fn) if isinstance(n, ast.Return)]
        if not returns:
            return False
        for ret in returns:
            value = ret.value
            if isinstance(value, ast.Call) and self._parsed_arguments(value):
                continue
            if not isinstance(value, ast.Name):
                return False
            bound = [
                n.value
                for n in self.model.walk_scope(fn)
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)
            ]
            if not bound or not all(
                isinstance(b, ast.Call) and self._parsed_arguments(b) for b in bound
            ):
                return False
        return True

    # --- pieces ------------------------------------------------------------------------------
    def _is_sync(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.With):
            return any(
                isinstance(i.context_expr, ast.Call)
                and self.model.call_name(i.context_expr) in STEP_CONTEXTS
                for i in stmt.items
            )
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        call = stmt.value
        qualname = self.model.call_name(call)
        if qualname in SYNCS:
            return True
        barrier = keyword(call, "barrier")
        return (
            qualname == OPTIMIZER_STEP
            and barrier is not None
            and isinstance(barrier.value, ast.Constant)
            and barrier.value.value is True
        )

    def fed_device(self, obj: ast.AST) -> bool:
        """``meter`` holds device tensors: its frame calls ``meter.update(<device tensor>)``."""
        return self._fed_device(obj, 0)

    def _fed_device(self, obj: ast.AST, depth: int) -> bool:
        """``meter`` of ``meter.avg`` when its frame calls ``meter.update(<device tensor>)``."""
        path = dotted(obj)
        if path is None or depth > MAX_DEPTH:
            return False
        scope = scope_of(self.model, obj)
        key = (scope, path)
        if key not in self._fed:
            self._fed[key] = False  # while judging its own updates
            self._fed[key] = any(
                isinstance(node, ast.Call)
                and method_name(node) == "update"
                and dotted(receiver(node)) == path  # type: ignore[arg-type]
                and any(self.is_device(a, depth + 1) for a in arguments(node))
                for node in self.model.walk_scope(scope)
            )
        return self._fed[key]


def _rebinds(body: list[ast.stmt], name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for stmt in body
        for n in ast.walk(stmt)
    )


def _used_as_value(model: ScriptModel, name: ast.Name) -> bool:
    """``n`` in ``v / n``, not ``self`` in ``self.model(x)`` (an object, not a number)."""
    parent = model.parent(name)
    return not (
        (isinstance(parent, ast.Attribute) and parent.value is name)
        or (isinstance(parent, ast.Call) and parent.func is name)
    )
