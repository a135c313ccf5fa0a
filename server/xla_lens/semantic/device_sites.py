"""Where a script picks its CUDA device, as XLA101 sees it: the shapes of device sites
(option defaults, ``torch.device`` wrappers, integer CUDA indices, availability guards and
flags) and the def-use index shared by every site of one parse. Pure analysis: the rule
builds findings and fixes from these answers.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import replace

from . import dict_devices, pickers
from .advice import Advice
from .device_refs import device_ref_at as device_ref_at  # re-exported: the rules ask here
from .edits import Replace
from .line_refs import line_ref, line_refs
from .model import ScriptModel, const_str, method_name
from .span import Span
from .values import DISPLAY_FUNCTIONS, DISPLAY_METHODS, DeviceFlow, Use, option_dest

RANK_NAME = re.compile(r"(^|_)(local_rank|rank|gpu|gpu_id|device_id|local_device)$")


def device_flow(model: ScriptModel) -> DeviceFlow:
    # One def-use index per parse, shared by every site of this rule.
    flow = model.__dict__.get("_xla_lens_device_flow")
    if flow is None:
        flow = model.__dict__["_xla_lens_device_flow"] = DeviceFlow(model)
    return flow


def is_str_valued(model: ScriptModel, node: ast.AST) -> bool:
    if isinstance(node, ast.IfExp):
        return is_str_valued(model, node.body) and is_str_valued(model, node.orelse)
    if isinstance(node, ast.Attribute) and node.attr == "type":
        return True
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) and node.func.attr == "format"
    return isinstance(node, ast.JoinedStr) or const_str(node) is not None


def comments_in(model: ScriptModel, node: ast.stmt) -> list[str]:
    """Comments inside a statement, so a rewrite that replaces it keeps them."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    text = "".join(model.text_lines(first, last))
    found: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found.append(tok.string)
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def flag_name_edit(model: ScriptModel, test: ast.AST) -> tuple[tuple, bool, str]:
    """Drop the availability part of ``use_accel = flag and avail()``; safe only when the
    flag only chooses the device (its other uses would now run on XLA hosts too)."""
    found = pickers.mixed_flag(model, test)
    assert found is not None and isinstance(test, ast.Name)
    assign, flags = found
    ops = (Replace(model.span(assign.value), " and ".join(model.segment(f) for f in flags)),)
    others = []
    for n in model.name_nodes(test.id):  # indexed by spelling: not a scan of every name
        if isinstance(n, ast.Name) and n.id == test.id and isinstance(n.ctx, ast.Load):
            p = model.parent(n)
            if isinstance(p, ast.If | ast.IfExp) and p.test is n and chooses_device(model, p):
                continue
            if not _runs_like_on_cuda(model, n):
                others.append(n)
    if not others:
        return ops, True, ""
    lines = line_refs(n.lineno for n in others[:3])
    return ops, False, f"{test.id} also decides other code (line {lines}), which will now run"


# CUDA calls that are harmless without CUDA (seeding is lazy); any other torch.cuda call in
# code the flag now switches on could fail on an XLA host.
HARMLESS_CUDA_CALLS = frozenset({"torch.cuda.manual_seed", "torch.cuda.manual_seed_all"})


def _runs_like_on_cuda(model: ScriptModel, use: ast.Name) -> bool:
    """With the flag true, this use does what the script does on a CUDA host, and nothing
    there needs CUDA: ``{"pin_memory": True} if use_cuda else {}``, ``pin_memory=use_cuda``,
    ``if use_cuda: kwargs.update(...)`` (``.cuda()`` there is converted on the next pass)."""
    p = model.parent(use)
    if isinstance(p, ast.keyword):
        return p.arg == "pin_memory"
    if not (isinstance(p, ast.If | ast.IfExp) and p.test is use):
        return False
    body = p.body if isinstance(p, ast.If) else [p.body]
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call):
                name = model.call_name(n) or ""
                # torch.accelerator.set_device_index & co. raise without CUDA too.
                if (
                    name.startswith(("torch.cuda.", "torch.accelerator."))
                    and name not in HARMLESS_CUDA_CALLS
                    and not name.endswith(".is_available")
                ):
                    return False
    return True


def chooses_device(model: ScriptModel, node: ast.If | ast.IfExp) -> bool:
    if isinstance(node, ast.IfExp):
        return pickers.picker(model, node) is not None
    return any(
        isinstance(s, ast.Assign)
        and any(is_device_name(t) for t in s.targets)
        and pickers.is_device_value(model, s.value)
        for s in node.body
    )


def wrapping_device_call(model: ScriptModel, node: ast.AST) -> ast.AST:
    """``torch.device(<node>)`` when the picker is wrapped in one, else ``node``."""
    p = model.parent(node)
    if isinstance(p, ast.Call) and model.call_name(p) == "torch.device" and p.args == [node]:
        return p
    return node


def option_call(model: ScriptModel, node: ast.AST) -> ast.Call | None:
    p = model.parent(node)
    if isinstance(p, ast.keyword) and p.arg == "default":
        call = model.parent(p)
        if isinstance(call, ast.Call) and method_name(call) == "add_argument":
            return call
    return None


def parameter_with_default(
    model: ScriptModel, site: ast.AST
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """``(function, parameter)`` when ``site`` is a parameter's default value
    (``def create_loader(..., device="cuda")``)."""
    args = model.parent(site)
    fn = model.parent(args) if isinstance(args, ast.arguments) else None
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    assert isinstance(args, ast.arguments)
    positional = [*args.posonlyargs, *args.args]
    with_default = positional[len(positional) - len(args.defaults) :]
    for arg, default in zip(with_default, args.defaults, strict=True):
        if default is site:
            return fn, arg.arg
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if default is site:
            return fn, arg.arg
    return None


def uses_of_site(model: ScriptModel, site: ast.AST) -> list[Use]:
    flow = device_flow(model)
    parameter = parameter_with_default(model, site)
    if parameter is not None:  # what the function does with the parameter it defaults
        return flow.uses_of_name(parameter[1], parameter[0])
    entry = dict_devices.entry_of(model, site)  # ``{"device": site}``: its reads by key
    if entry is not None:
        return dict_devices.entry_uses(model, flow, entry)
    option = option_call(model, site)
    if option is not None:
        dest = option_dest(option)
        return flow.uses_of_option(dest) if dest else [Use(site, False, "option not followed")]
    return flow.uses_of_expr(site)


# ``use_gpu``, ``no_gpu``, ``with_gpu``: a yes/no flag named for the GPU, not its index
# (dlrm's ``use_gpu = args.use_gpu``, held-out 24, was taken for a device number).
BOOLEAN_PREFIXES = ("use_", "no_", "with_", "enable_", "disable_", "is_", "has_", "allow_")
# ``images_per_gpu`` (HigherHRNet's batch size per GPU, held-out 83), ``n_gpu``, ``num_gpu``:
# a size or a count named for the GPU, not its index.
COUNT_PREFIXES = ("n_", "num_", "nb_", "number_of_", "total_")


def _names_a_count(name: str) -> bool:
    return "per_gpu" in name or name.startswith(COUNT_PREFIXES)


def rank_index(node: ast.AST | None) -> bool:
    """An integer CUDA index by name: ``local_rank``, ``args.gpu``, ``rank``."""
    if isinstance(node, ast.Name):
        name = node.id.lower()
    elif isinstance(node, ast.Attribute):
        name = node.attr.lower()
    else:
        return False
    return (
        bool(RANK_NAME.search(name))
        and not name.startswith(BOOLEAN_PREFIXES)
        and not _names_a_count(name)
    )


def is_device_name(target: ast.AST) -> bool:
    key = pickers._target_key(target)
    if key is None and isinstance(target, ast.Attribute):
        key = target.attr
    if key is None:
        return False
    last = key.lower().rpartition(".")[2]
    # ``--dvc`` (DRL-Pytorch's option, held-out 71) abbreviates "device" too.
    dvc = last == "dvc" or last.endswith("_dvc")
    return (
        dvc
        or "dev" in last
        or (
            last.endswith("gpu")
            and not last.startswith(BOOLEAN_PREFIXES)
            and not _names_a_count(last)
        )
    )


def is_int_cuda_device(model: ScriptModel, value: ast.AST) -> bool:
    """``rank % torch.cuda.device_count()``, ``local_rank``: a CUDA index kept as the device."""
    if rank_index(value):
        from .bool_options import is_bool_option  # noqa: PLC0415 (imports the model)

        name = value.attr if isinstance(value, ast.Attribute) else value.id  # type: ignore[attr-defined]
        return not is_bool_option(model, name)
    if isinstance(value, ast.Call) and model.call_name(value) == "torch.cuda.current_device":
        return True
    return isinstance(value, ast.BinOp) and any(
        isinstance(n, ast.Call) and model.call_name(n) == "torch.cuda.device_count"
        for n in ast.walk(value)
    )


def bool_value(node: ast.AST) -> ast.AST:
    """``True if test else False`` is ``test``."""
    if (
        isinstance(node, ast.IfExp)
        and isinstance(node.body, ast.Constant)
        and node.body.value is True
        and isinstance(node.orelse, ast.Constant)
        and node.orelse.value is False
    ):
        return node.test
    return node


def mentions_cuda(model: ScriptModel, call: ast.Call) -> bool:
    return any(
        "cuda" in (const_str(k.value) or "") for k in call.keywords if k.arg in {"help", "choices"}
    ) or any("cuda" in model.segment(k.value) for k in call.keywords if k.arg == "choices")


def availability_guards(model: ScriptModel) -> list[tuple[Span, str, str]]:
    """Blocks that run only when CUDA (or another accelerator) is available, or only when a
    device's type is (or is not) "cuda": (statement span, the test's text, what it tests)."""
    return model.memo(availability_guards, lambda: _availability_guards(model))


def _availability_guards(model: ScriptModel) -> list[tuple[Span, str, str]]:
    guards = []
    for node in model.nodes_of(ast.If):
        if not isinstance(node, ast.If):
            continue
        if _none_test(node.test):
            continue  # ``if device is None:`` asks for a default, not for CUDA (held-out 16)
        if pickers.mentions_availability(model, node.test):
            kind = "a CUDA availability test"
        elif tests_cuda_type(node.test):
            kind = 'a test of the device type against "cuda"'
        else:
            continue
        test = model.segment(node.test)
        for stmt in (*node.body, *node.orelse):
            guards.append((model.span(stmt), test, kind))
    return guards


def _none_test(test: ast.AST) -> bool:
    """``x is None`` / ``x is not None``."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is | ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def tests_cuda_type(test: ast.AST) -> bool:
    """``device.type == "cuda"`` / ``x.device.type in ("cuda", "mps")``: a device's type
    compared with "cuda", which says otherwise once the device is the XLA device (held-out
    17: the only model move sat under one, in a helper handed the device)."""
    for n in ast.walk(test):
        if not isinstance(n, ast.Compare):
            continue
        sides = [n.left, *n.comparators]
        typed = any(isinstance(c, ast.Attribute) and c.attr == "type" for c in sides)
        names = [
            const_str(e)
            for c in sides
            for e in (c.elts if isinstance(c, ast.Tuple | ast.List | ast.Set) else [c])
        ]
        if typed and "cuda" in names:
            return True
    return False


def availability_flags(
    model: ScriptModel, handled: set[int]
) -> list[tuple[ast.Assign, str, list[ast.Name]]]:
    """``cuda = True if torch.cuda.is_available() else False`` and the ``if cuda:`` tests it
    decides (other than device pickers, which are converted on their own)."""
    out = []
    for node in model.nodes_of(ast.Assign):
        if not isinstance(node, ast.Assign) or id(node.value) in handled:
            continue
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        name = node.targets[0].id
        if not any(k in name.lower() for k in ("cuda", "gpu")):
            continue
        if not pickers.is_availability(model, bool_value(node.value)):
            continue
        tests = []
        # The names spelled like the flag (indexed once per parse): a scan of every name per
        # flag assignment grew with the file times its flags.
        for n in model.name_nodes(name):
            p = model.parent(n)
            if (
                isinstance(n, ast.Name)
                and n.id == name
                and isinstance(p, ast.If | ast.IfExp)
                and p.test is n
                and not chooses_device(model, p)
            ):
                tests.append(n)
        if tests:
            out.append((node, name, tests))
    return out


def int_device_binding(model: ScriptModel, arg: ast.AST) -> ast.AST | None:
    """``device`` in ``.to(device)`` after ``device = rank % torch.cuda.device_count()``: the
    value of its one binding, when that binding is an integer CUDA index and comes first in
    the same function (or the module, with no binding in the function). None when the name
    is a parameter or bound in any other way: the index might not be the one reaching here."""
    if not isinstance(arg, ast.Name) or not isinstance(arg.ctx, ast.Load):
        return None
    fn = model.enclosing_function(arg)
    if fn is not None and arg.id in {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}:
        return None
    stores = _stores(model, arg.id, fn)
    if not stores and fn is not None:
        stores = _stores(model, arg.id, None)
    elif stores and (stores[0].lineno, stores[0].col_offset) > (arg.lineno, arg.col_offset):
        return None
    if len(stores) != 1:
        return None
    assign = model.parent(stores[0])
    if not (isinstance(assign, ast.Assign) and assign.targets == [stores[0]]):
        return None
    return assign.value if is_int_cuda_device(model, assign.value) else None


def _stores(model: ScriptModel, name: str, fn: ast.AST | None) -> list[ast.Name]:
    """Every binding of ``name`` in ``fn`` (None: the module), in source order."""
    # Grouped by function once per name: a scan of every binding of a common name (``x``,
    # ``model``) per argument grew with the square of the file's size.
    by_function = model.memo((_stores, name), lambda: _stores_by_function(model, name))
    return by_function.get(fn, [])


def _stores_by_function(model: ScriptModel, name: str) -> dict[ast.AST | None, list[ast.Name]]:
    out: dict[ast.AST | None, list[ast.Name]] = {}
    for n in model.name_nodes(name):
        if not isinstance(n.ctx, ast.Load):
            out.setdefault(model.enclosing_function(n), []).append(n)
    for stores in out.values():
        stores.sort(key=lambda n: (n.lineno, n.col_offset))
    return out


# Calls of a module's own that only a module (or its wrapper) answers.
MODULE_METHODS = frozenset(
    {"parameters", "named_parameters", "state_dict", "load_state_dict", "modules", "eval"}
)
COPIES = frozenset({"copy.deepcopy", "copy.copy"})


def places_a_module(model: ScriptModel, node: ast.AST | None, depth: int = 0) -> bool:
    """``node`` is an ``nn.Module`` by what the script does with it: a copy of one
    (``deepcopy(model)``), one built by ``from_pretrained`` / ``torch.nn`` / a class, or a
    name whose parameters or state the script reads. A batch or a tensor is none of these."""
    if node is None or depth > 2:
        return False
    if isinstance(node, ast.Call):
        name = model.call_name(node) or ""
        if name in COPIES:
            return bool(node.args) and places_a_module(model, node.args[0], depth + 1)
        if name.startswith("torch.nn.") or method_name(node) == "from_pretrained":
            return True
        # ``Net()``, ``models.ResNet()``: a class; ``torch.Tensor(...)`` and kin are tensors.
        last = name.rpartition(".")[2] or (node.func.id if isinstance(node.func, ast.Name) else "")
        return last[:1].isupper() and not name.startswith("torch.")
    if not isinstance(node, ast.Name):
        return False
    if node.id in _module_method_receivers(model):
        return True
    # The answer for a name depends on the name alone (all its assignments): once per parse.
    known: dict[tuple[str, int], bool] = model.memo(places_a_module, dict)
    key = (node.id, depth)
    if key not in known:
        known[key] = any(
            isinstance(a.value, ast.Call) and places_a_module(model, a.value, depth + 1)
            for a in model.assignments.get(node.id, ())
        )
    return known[key]


def reviewed_if_displayed(model: ScriptModel, value: ast.AST, advice: Advice) -> Advice:
    """An integer index made the XLA device: a device use of it works the same, but one that
    prints it (``print(f"gpu {device}")``, ``logger.info(device)``) now shows ``xla:0``
    instead of the number. Such a fix is offered for review, naming those lines."""
    if advice.fix is None or not advice.fix.safe:
        return advice
    shown = [u for u in uses_of_site(model, value) if u.ok and _displays(model, u.node)]
    if not shown:
        return advice
    reason = (
        "the index is also printed, which would show the XLA device instead of the number: "
        + ", ".join(f"line {line_ref(u.node.lineno)}" for u in shown[:3])  # type: ignore[attr-defined]
    )
    return replace(
        advice,
        message=f"{advice.message} (fix needs review: {reason})",
        fix=replace(advice.fix, safe=False, review_reason=reason),
    )


def _displays(model: ScriptModel, node: ast.AST) -> bool:
    for a in model.ancestors(node):
        if isinstance(a, ast.FormattedValue):
            return True
        if isinstance(a, ast.Call):
            if isinstance(a.func, ast.Name) and a.func.id in DISPLAY_FUNCTIONS:
                return True
            return method_name(a) in DISPLAY_METHODS
        if isinstance(a, ast.stmt):
            return False
    return False


def _module_method_receivers(model: ScriptModel) -> frozenset[str]:
    """Names module-only methods are called on (``net.parameters()``), once per parse: asked
    for every name, a scan of the calls each time was quadratic in the script's length."""

    def build() -> frozenset[str]:
        return frozenset(
            recv.id
            for call in model.method_calls(*MODULE_METHODS)
            if isinstance(call.func, ast.Attribute)
            and isinstance(recv := call.func.value, ast.Name)
        )

    return model.memo(_module_method_receivers, build)
