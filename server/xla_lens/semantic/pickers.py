"""Device pickers: the expressions and statements a script uses to choose its device.

Recognised shapes (GUIDE.md section I):
- ``"cuda" if torch.cuda.is_available() else "cpu"`` and chains through ``mps``/``cpu``;
- flag pickers ``"cuda" if opt.cuda else "cpu"``, ``"cuda" if args.cuda and avail() else "cpu"``;
- ``torch.accelerator.current_accelerator()`` (``.type``), guarded by
  ``torch.accelerator.is_available()``;
- ``if torch.cuda.is_available(): device = "cuda" [elif ...] [else: device = "cpu"]``.

An *availability test* asks whether CUDA (or another non-XLA accelerator) is present: on an XLA
host it is False, so a conversion must drop it; a *flag* is the user's own choice and stays.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .model import ScriptModel, const_str, is_cuda_string

AVAILABILITY_CALLS = frozenset(
    {
        "torch.cuda.is_available",
        "torch.backends.mps.is_available",
        "torch.backends.mps.is_built",
        "torch.accelerator.is_available",
        "torch.cuda.device_count",
        "torch.accelerator.device_count",
        "torch.xpu.is_available",
    }
)
# accelerate.utils / transformers.utils helpers that ask the same question.
AVAILABILITY_HELPERS = frozenset(
    {"is_xpu_available", "is_npu_available", "is_mps_available", "is_cuda_available"}
)
AVAILABILITY_ATTRS = frozenset({"torch.has_mps", "torch.has_cuda"})
VISIBLE_GPUS = "CUDA_VISIBLE_DEVICES"
ACCELERATOR_CALL = "torch.accelerator.current_accelerator"
OTHER_DEVICES = frozenset({"cpu", "mps", "xpu", "meta"})
# Words that name a CUDA flag (``args.cuda``, ``opt.use_gpu``).
FLAG_WORDS = ("cuda", "gpu")


# Modules whose attributes are device backends (hasattr on them asks "is there an mps?").
BACKEND_OWNERS = frozenset(
    {"torch", "torch.backends", "torch.cuda", "torch.xpu", "torch.mps", "torch.accelerator"}
)


def flag_values(model: ScriptModel, node: ast.AST) -> list[ast.expr]:
    """What a flag name was assigned (``use_cuda = torch.cuda.is_available()``)."""
    if isinstance(node, ast.Name):
        return [v for v in model.assigned_from(node.id) if v is not None]
    return []


def is_availability(model: ScriptModel, node: ast.AST, follow: bool = True) -> bool:
    """Only availability questions (combined with and/or/not, compared with numbers),
    directly or through a flag name assigned from one."""
    # A flag name is followed one assignment deep (``x = x + 1`` must not loop).
    values = flag_values(model, node) if follow else []
    if values:
        return all(is_availability(model, v, False) for v in values)
    if isinstance(node, ast.BoolOp):
        return all(is_availability(model, v, follow) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return is_availability(model, node.operand, follow)
    if _reads_visible_gpus(model, node):
        return True
    if isinstance(node, ast.Compare):
        others = [node.left, *node.comparators]
        return any(is_availability(model, o, follow) for o in others) and all(
            is_availability(model, o, follow) or isinstance(o, ast.Constant) for o in others
        )
    if isinstance(node, ast.Call):
        name = model.call_name(node) or ""
        if name in AVAILABILITY_CALLS or name.rpartition(".")[2] in AVAILABILITY_HELPERS:
            return True
        # hasattr(torch.backends, "mps"), hasattr(torch, "xpu"): asks whether a backend exists.
        # Not hasattr(torch._inductor.config, "coordinate_descent_tuning") (llm.c): a setting.
        owner = (
            model.qualname(node.args[0]) or ""
            if isinstance(node.func, ast.Name) and node.func.id == "hasattr" and len(node.args) == 2
            else ""
        )
        return owner in BACKEND_OWNERS or owner.startswith("torch.backends.")
    if isinstance(node, ast.Attribute):
        return model.qualname(node) in AVAILABILITY_ATTRS
    return False


def _reads_visible_gpus(model: ScriptModel, node: ast.AST) -> bool:
    """``os.environ.get("CUDA_VISIBLE_DEVICES")`` (``os.getenv``, ``in os.environ``): the GPU
    list CUDA's launchers and users set, unset on an XLA host, so a device picked by it is the
    CPU there (tabular-dl-revisiting-models' ``get_device``, held-out 107): a question about
    CUDA, not the user's choice of device."""
    if isinstance(node, ast.Call):
        return (
            model.call_name(node) in ("os.environ.get", "os.getenv")
            and bool(node.args)
            and const_str(node.args[0]) == VISIBLE_GPUS
        )
    return (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In | ast.NotIn)
        and const_str(node.left) == VISIBLE_GPUS
        and model.qualname(node.comparators[0]) == "os.environ"
    )


def mentions_availability(model: ScriptModel, node: ast.AST, follow: bool = True) -> bool:
    if follow:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and _flag_mentions_availability(model, n.id):
                return True
            if isinstance(n, ast.Attribute) and (
                n.attr in attribute_flags(model)
                or external_flag(model, n) is not None
                or _attribute_mentions_availability(model, n.attr)
            ):
                return True
    return _mentions_directly(model, node)


def attribute_stores(model: ScriptModel) -> dict[str, list[ast.Assign]]:
    """``<name>.<attr> = value`` assignments anywhere in the script, by ``attr``."""

    def build() -> dict[str, list[ast.Assign]]:
        found: dict[str, list[ast.Assign]] = {}
        for node in model.nodes_of(ast.Assign):
            assert isinstance(node, ast.Assign)
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    found.setdefault(t.attr, []).append(node)
        return found

    return model.memo(attribute_stores, build)


def attribute_flags(model: ScriptModel) -> dict[str, ast.Assign]:
    """``args.cuda = not args.no_cuda and torch.cuda.is_available()``: attributes named for
    CUDA that the script sets, once, from an availability question (held-out 16, pygcn) →
    the assignment."""

    def build() -> dict[str, ast.Assign]:
        return {
            attr: nodes[0]
            for attr, nodes in attribute_stores(model).items()
            if any(k in attr.lower() for k in FLAG_WORDS)
            and len(nodes) == 1
            and _mentions_directly(model, nodes[0].value)
        }

    return model.memo(attribute_flags, build)


def _attribute_mentions_availability(model: ScriptModel, attr: str) -> bool:
    """Some store of ``<name>.attr`` (named for CUDA) asks for availability, among others
    (held-out 59's GPT2-chitchat: ``args.cuda = not args.no_cuda``, later ``args.cuda =
    torch.cuda.is_available() and not args.no_cuda``): not the user's choice alone."""
    if not any(k in attr.lower() for k in FLAG_WORDS):
        return False
    return any(_mentions_directly(model, a.value) for a in attribute_stores(model).get(attr, ()))


@dataclass(frozen=True)
class ExternalFlag:
    """``a.gpu`` where ``a = parse()`` and ``parse`` (a sibling module's function) sets
    ``a.gpu = not a.no_gpu and torch.cuda.is_available()``."""

    module: str  # the file that sets it
    line: int
    kept: str  # the assignment keeping only the user's flags ("" when they cannot be separated)


def external_flag(model: ScriptModel, node: ast.AST) -> ExternalFlag | None:
    if not (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and any(w in node.attr.lower() for w in FLAG_WORDS)
    ):
        return None
    for value in model.assigned_from(node.value.id):
        facts = model.steps.external(value) if isinstance(value, ast.Call) else None
        for attr, line, kept in facts.availability_attrs if facts is not None else ():
            if attr == node.attr:
                return ExternalFlag(facts.module, line, kept)
    return None


def _flag_mentions_availability(model: ScriptModel, name: str) -> bool:
    """Whether any value assigned to ``name`` mentions an availability question (once per
    name and parse: asked per mention, a scan of every value was quadratic)."""
    cache: dict[str, bool] = model.memo(_flag_mentions_availability, dict)
    found = cache.get(name)
    if found is None:
        found = cache[name] = any(
            _mentions_directly(model, v) for v in model.assigned_from(name) if v is not None
        )
    return found


def _mentions_directly(model: ScriptModel, node: ast.AST) -> bool:
    # Asked for every ``if`` test and every value of every flag name it mentions: each
    # expression is looked at once per parse (keyed by the node: the model keeps it alive).
    cache: dict[ast.AST, bool] = model.memo(_mentions_directly, dict)
    found = cache.get(node)
    if found is None:
        found = cache[node] = any(
            is_availability(model, n, False)
            for n in ast.walk(node)
            if isinstance(n, ast.Call | ast.Attribute)
        )
    return found


def flag_part(model: ScriptModel, test: ast.AST) -> ast.expr | list[ast.expr] | None:
    """For ``flag and avail()``: the conjuncts that are the user's flags (availability
    dropped). None when ``test`` mixes them in any other way."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        flags = [v for v in test.values if not is_availability(model, v)]
        if flags and len(flags) < len(test.values):
            if not any(mentions_availability(model, f) for f in flags):
                return flags
    return None


def mixed_flag(model: ScriptModel, test: ast.AST) -> tuple[ast.Assign, list[ast.expr]] | None:
    """``use_accel`` assigned once from ``not args.no_accel and torch.accelerator.is_available()``:
    the assignment and the user's flags in it."""
    if not isinstance(test, ast.Name):
        return None
    assigns = model.assignments.get(test.id, [])
    if len(assigns) != 1 or not isinstance(assigns[0], ast.Assign):
        return None
    flags = flag_part(model, assigns[0].value)
    return (assigns[0], flags) if isinstance(flags, list) else None


def is_accelerator_value(model: ScriptModel, node: ast.AST) -> bool:
    """``torch.accelerator.current_accelerator()`` or its ``.type``."""
    if isinstance(node, ast.Attribute) and node.attr == "type":
        node = node.value
    return isinstance(node, ast.Call) and model.call_name(node) == ACCELERATOR_CALL


def is_device_value(model: ScriptModel, node: ast.AST) -> bool:
    """A CUDA device value: ``"cuda"``, ``"cuda:0"``, ``f"cuda:{rank}"``,
    ``"cuda:{}".format(r)``, an accelerator query, or ``torch.device`` of one."""
    if is_cuda_string(node) or is_accelerator_value(model, node):
        return True
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and (const_str(node.func.value) or "").startswith("cuda:")
    ):
        return True
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod | ast.Add)
        and (const_str(node.left) or "").startswith("cuda:")
    ):
        return True  # "cuda:%d" % rank, "cuda:" + str(rank)
    if isinstance(node, ast.Call) and model.call_name(node) == "torch.device" and node.args:
        return is_device_value(model, node.args[0])
    return False


def is_other_device(node: ast.AST) -> bool:
    """``"cpu"``/``"mps"``/``torch.device("cpu")``: the non-CUDA side of a picker."""
    s = const_str(node)
    if s is not None:
        return s.split(":")[0] in OTHER_DEVICES
    if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute | ast.Name):
        return is_other_device(node.args[0])
    return False


@dataclass(frozen=True)
class Picker:
    """A conditional device expression: ``device_branch`` is the CUDA/accelerator side."""

    node: ast.IfExp
    device_branch: ast.expr
    # "availability": the test only asks for hardware; "mixed": flags and availability
    # joined by ``and``; "flag": the user's choice only; "tensor": ``x.is_cuda``, where a
    # tensor already is; "configured": a device the configuration names, taken only where
    # CUDA is available.
    test_kind: str
    flags: tuple[ast.expr, ...] = ()

    @property
    def chooses_when_false(self) -> bool:
        """``"cpu" if opt.no_cuda else "cuda"``: the device is the ``else`` side."""
        return self.device_branch is self.node.orelse


def picker(model: ScriptModel, node: ast.AST) -> Picker | None:
    """``"cuda" if <test> else "cpu"`` (chains through further pickers or other devices),
    or the other way round, ``"cpu" if <test> else "cuda"``."""
    if not isinstance(node, ast.IfExp):
        return None
    if not is_device_value(model, node.body):
        reversed_ = _reversed_picker(model, node)
        if reversed_ is not None:
            return reversed_
        if (
            isinstance(node.body, ast.Name | ast.Attribute | ast.Subscript)
            and is_availability(model, node.test)
            and is_other_device(node.orelse)
            and not _cuda_option(model, node.body)
        ):
            # ``cfg.device if torch.cuda.is_available() else "cpu"`` (held-out 54): the
            # configured device where CUDA is, the CPU elsewhere, an XLA host included.
            return Picker(node, node.body, "configured")
        return None
    if tensor_on_cuda(node.test) is not None and is_other_device(node.orelse):
        # ``torch.device('cuda') if features.is_cuda else torch.device('cpu')`` (SupContrast's
        # loss, held-out 25): the device of ``features``, not a user's flag.
        return Picker(node, node.body, "tensor")
    rest = node.orelse
    if not _is_device_chain(model, rest) or _tests_a_device(node.test):
        return None
    chain_avail = not isinstance(rest, ast.IfExp) or all(
        is_availability(model, n.test) for n in _chain(rest)
    )
    if is_availability(model, node.test) and chain_avail:
        return Picker(node, node.body, "availability")
    flags = flag_part(model, node.test)
    if isinstance(flags, list) and not isinstance(rest, ast.IfExp):
        return Picker(node, node.body, "mixed", tuple(flags))
    if mixed_flag(model, node.test) is not None and not isinstance(rest, ast.IfExp):
        return Picker(node, node.body, "mixed-name")
    if not mentions_availability(model, node.test) and not isinstance(rest, ast.IfExp):
        return Picker(node, node.body, "flag")
    return Picker(node, node.body, "unknown")


def _cuda_option(model: ScriptModel, node: ast.expr) -> bool:
    """``args.device`` of a ``--device`` option defaulting to CUDA: XLA101's option finding
    changes the default and drops the availability test with it (option_guards)."""
    from .arguments import argparse_options, is_parsed_args  # noqa: PLC0415 (imports pickers)

    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
        return False
    if not is_parsed_args(model, node.value):
        return False
    option = argparse_options(model).get(node.attr)
    return (
        option is not None and option.default is not None and is_device_value(model, option.default)
    )


def tensor_on_cuda(test: ast.AST) -> ast.expr | None:
    """``x`` of a test ``x.is_cuda``: whether a tensor sits on CUDA."""
    if isinstance(test, ast.Attribute) and test.attr == "is_cuda":
        return test.value
    return None


def _reversed_picker(model: ScriptModel, node: ast.IfExp) -> Picker | None:
    """``"cpu" if opt.no_cuda else "cuda"`` / ``"cpu" if not avail() else "cuda"``: only
    the plain two-way form (a flag alone, or availability alone)."""
    if not (is_other_device(node.body) and is_device_value(model, node.orelse)):
        return None
    if _tests_a_device(node.test):
        return None
    if is_availability(model, node.test):
        return Picker(node, node.orelse, "availability")
    if not mentions_availability(model, node.test):
        return Picker(node, node.orelse, "flag")
    return Picker(node, node.orelse, "unknown")


def _is_device_chain(model: ScriptModel, node: ast.AST) -> bool:
    """``"cpu"``, a device value, or ``"mps" if avail() else "cpu"`` chains of them."""
    if isinstance(node, ast.IfExp):
        return _is_device_chain(model, node.body) and _is_device_chain(model, node.orelse)
    return is_other_device(node) or is_device_value(model, node)


def _tests_a_device(test: ast.AST) -> bool:
    """``"cuda" in device`` / ``device.startswith("cuda")``: a use of a device already
    chosen (``device_type = "cuda" if "cuda" in device else "cpu"``), not a picker."""
    for n in ast.walk(test):
        if isinstance(n, ast.Compare) and _asks_for_the_cpu(n):
            continue
        if isinstance(n, ast.Compare) and any(_names_a_device(c) for c in (n.left, *n.comparators)):
            return True
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in {"startswith", "endswith"}
        ):
            return True
    return False


# Device words a test compares a chosen device (or a user's device option) with; another
# string (``args.backend == "gloo"``, YOLOX) makes the test a flag of the user's.
_DEVICE_WORDS = frozenset({*OTHER_DEVICES, "cuda", "gpu", "xla", "tpu", "npu", "hpu", "mlu"})


def _asks_for_the_cpu(test: ast.Compare) -> bool:
    """``args.device == "cpu"`` / ``opt.device != "cpu"``: the user's option asking for the
    CPU, whose other side is the accelerator (``"cpu" if args.device == "cpu" else "cuda"``):
    a flag, not a device already chosen (``device.type == "cpu"`` is one)."""
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq | ast.NotEq):
        return False
    sides = (test.left, test.comparators[0])
    option = next((n for n in sides if isinstance(n, ast.Attribute)), None)
    return (
        option is not None
        and option.attr != "type"
        and isinstance(option.value, ast.Name)
        and any(const_str(n) == "cpu" for n in sides)
    )


def _names_a_device(node: ast.AST) -> bool:
    s = const_str(node)
    return s is not None and s.split(":")[0].strip().lower() in _DEVICE_WORDS


def _chain(node: ast.AST) -> list[ast.IfExp]:
    out = []
    while isinstance(node, ast.IfExp):
        out.append(node)
        node = node.orelse
    return out


@dataclass(frozen=True)
class IfPicker:
    """``if avail(): dev = "cuda" [elif ...: dev = "mps"] [else: dev = "cpu"]``."""

    node: ast.If
    target: ast.expr  # the assigned name or ``self.<attr>``
    # Statements in the branches other than the device assignments (prints, CUDA settings).
    extras: tuple[ast.stmt, ...]
    has_else: bool


def _target_key(t: ast.AST) -> str | None:
    if isinstance(t, ast.Name):
        return t.id
    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
        return "self." + t.attr
    return None


def if_picker(model: ScriptModel, node: ast.If) -> IfPicker | None:
    """An if/elif chain whose tests are all availability questions and whose branches all
    assign one device variable (at least one branch a CUDA/accelerator value)."""
    branches: list[list[ast.stmt]] = []
    cur: ast.stmt = node
    while True:
        assert isinstance(cur, ast.If)
        if not is_availability(model, cur.test):
            return None
        branches.append(cur.body)
        if len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If):
            cur = cur.orelse[0]
            continue
        has_else = bool(cur.orelse)
        if has_else:
            branches.append(cur.orelse)
        break
    key = None
    target = None
    extras: list[ast.stmt] = []
    saw_device = False
    # A branch may leave the variable alone (``device = "cpu"`` before the ``if``, only a
    # ``print`` in the ``else``): what else it runs is judged as an extra.
    for body in branches:
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                k = _target_key(stmt.targets[0])
                if k is not None and ("dev" in k.lower()):
                    if key is not None and k != key:
                        return None
                    key, target = k, stmt.targets[0]
                    if is_device_value(model, stmt.value):
                        saw_device = True
                    continue
            extras.append(stmt)
    if not saw_device or target is None:
        return None
    return IfPicker(node, target, tuple(extras), has_else)


def is_harmless_extra(model: ScriptModel, stmt: ast.stmt) -> bool:
    """A statement an availability branch may run that the XLA conversion can drop: a
    message, or a CUDA-only setting (it never ran on an XLA host anyway)."""
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        name = model.call_name(call) or ""
        if isinstance(call.func, ast.Name) and call.func.id == "print":
            return True
        if name.startswith(("torch.cuda.", "torch.backends.", "logging.")):
            return True
        if isinstance(call.func, ast.Attribute) and call.func.attr in {"info", "warning", "debug"}:
            return True
    if isinstance(stmt, ast.Assign):
        return all((model.qualname(t) or "").startswith("torch.backends.") for t in stmt.targets)
    return False


def other_effects(model: ScriptModel, stmts: list[ast.stmt], target: ast.expr) -> list[ast.stmt]:
    """The statements of a picker's branch that do more than set ``target`` or say which
    device was chosen (``elif`` branches included)."""
    name = model.segment(target)
    out: list[ast.stmt] = []
    for s in stmts:
        if isinstance(s, ast.If):
            out.extend(other_effects(model, s.body, target))
            out.extend(other_effects(model, s.orelse, target))
        elif not (
            isinstance(s, ast.Assign)
            and [model.segment(t) for t in s.targets] == [name]
            or is_harmless_extra(model, s)
        ):
            out.append(s)
    return out
