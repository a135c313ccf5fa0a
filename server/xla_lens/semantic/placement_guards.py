"""Other code that decides by the same availability test as a device picker.

A picker such as ``device = torch.device("cuda" if use_cuda else "cpu")`` is one of several
places that ask whether CUDA is there: ``if use_cuda: model = model.to(device)``,
``if torch.cuda.is_available(): model = DDP(model)``. On the original's hosts they agree
(CUDA: device cuda and the block runs; no CUDA: the CPU and the block skipped). Once the picker
says the XLA device, the other tests are still False on an XLA host, so the model stays on the
CPU while the inputs go to XLA ("Expected XLA tensor"). A picker rewrite is meaning-preserving
only if such tests are rewritten with it, the same way (the availability flag made true, or its
availability part dropped), and that is provable only when every use of that flag does on the
XLA host what a CUDA host did, needing no CUDA call. ``plan(...)`` says which edits make them
agree and whether that is safe; otherwise why the picker fix needs review. Pure analysis.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from . import pickers
from .device_sites import bool_value
from .edits import EditOp, Replace
from .line_refs import line_ref
from .model import ScriptModel, const_str, method_name

# CUDA calls that do nothing harmful on a host without CUDA (seeding is lazy).
HARMLESS_CUDA_CALLS = frozenset({"torch.cuda.manual_seed", "torch.cuda.manual_seed_all"})
# Keywords whose value only tunes speed: taking the CUDA host's value on XLA changes nothing.
TUNING_KEYWORDS = frozenset({"pin_memory", "non_blocking", "persistent_workers"})


@dataclass(frozen=True)
class GuardPlan:
    """Edits that make the other availability tests agree with the XLA device, whether the
    picker fix (with them) is safe, why not, and the flag assignments the edits rewrite."""

    ops: tuple[EditOp, ...] = ()
    safe: bool = True
    reason: str = ""
    rewritten: tuple[ast.Assign, ...] = ()

    @property
    def note(self) -> str:
        """What the fix also rewrites, for its title (``use_cuda = True``)."""
        return ", ".join(
            f"{ast.unparse(a.targets[0])} = {op.code}"
            for a, op in zip(self.rewritten, self.ops, strict=True)
            if isinstance(op, Replace)
        )


def plan(
    model: ScriptModel, picker: ast.AST, test: ast.AST | None, kept: frozenset[str] = frozenset()
) -> GuardPlan:
    """For the picker ``picker`` (an expression or statement) chosen by ``test``: the other
    places that decide by CUDA availability and what keeps them in step. Flags named in
    ``kept`` are already rewritten by the caller (``use_accel = not args.no_accel``)."""
    inside = {id(n) for n in ast.walk(picker)}
    flags = [f for f in flag_names(model, test) if f not in kept] if test is not None else []
    blocking = []  # tests that matter and read no flag this fix rewrites
    for site, flag in _sites(model, inside, frozenset(flags) | kept):
        if flag in kept or _harmless(model, site):
            continue
        if flag in flags:
            continue  # judged below, with the flag's rewrite
        blocking.append(site)
    ops: list[EditOp] = []
    rewritten: list[ast.Assign] = []
    unsure: list[str] = []
    for name in flags:
        reads = [n for n in _flag_loads(model, name) if id(n) not in inside]
        pickers_too = [n for n in reads if _is_picker(model, _guarded(model, _site_of(model, n)))]
        reads = [n for n in reads if n not in pickers_too]
        uses = [n for n in reads if not _harmless(model, _site_of(model, n))]
        if not uses:
            continue  # only the picker (and code that does not matter) reads it
        assign = _single_assignment(model, name)
        if assign is None:
            blocking.append(uses[0])
            continue
        # Another picker on the flag would pick CUDA once the flag is true, unless its own
        # fix is applied too: not provable here.
        cuda_reads = pickers_too + [n for n in reads if not _runs_like_on_cuda(model, n)]
        if cuda_reads:
            # Left to the flag's own finding (XLA101 reports availability flags for review).
            unsure.append(
                f"{name} (False on an XLA host) also decides {_describe(model, uses)}: that "
                "code would not run with the XLA device, and the flag cannot simply be made "
                f"true (code it switches on needs or picks CUDA, or is passed on: "
                f"{_describe(model, cuda_reads)})"
            )
            continue
        ops.append(Replace(model.span(assign.value), _without_availability(model, assign.value)))
        rewritten.append(assign)
    reasons = []
    if blocking:
        reasons.append(
            f"{_describe(model, blocking)} still decides by CUDA availability (False on an XLA "
            "host), so the placement it guards would not happen on the XLA device; rewrite that "
            "test with the picker"
        )
    reasons.extend(unsure)
    return GuardPlan(tuple(ops), not reasons, "; ".join(reasons), tuple(rewritten))


def flag_names(model: ScriptModel, test: ast.AST) -> list[str]:
    """Names in ``test`` that hold an availability answer (``use_cuda``, ``use_accel``)."""
    out: list[str] = []
    # Whether a name holds an availability answer depends on the name only (its assignments
    # anywhere in the script): judged once per name per parse, not once per test that reads it.
    known: dict[str, bool] = model.memo(flag_names, dict)
    for n in ast.walk(test):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in out:
            is_flag = known.get(n.id)
            if is_flag is None:
                values = pickers.flag_values(model, n)
                is_flag = known[n.id] = bool(values) and any(
                    _is_flag_value(model, v) for v in values
                )
            if is_flag:
                out.append(n.id)
    return out


def _is_flag_value(model: ScriptModel, value: ast.expr) -> bool:
    """An availability answer (``torch.cuda.is_available()``, ``not args.no_cuda and ...``),
    not a device chosen by one (``device.type == "cuda"`` is judged by the device's uses)."""
    value = bool_value(value)
    return pickers.is_availability(model, value, False) or isinstance(
        pickers.flag_part(model, value), list
    )


def _asks_availability(model: ScriptModel, test: ast.AST) -> tuple[bool, frozenset[str]]:
    """Whether ``test`` asks about availability, and the flag names it reads to do so."""
    # Every picker's plan looks at every test of the script: judge each test once per parse.
    known: dict[ast.AST, tuple[bool, frozenset[str]]] = model.memo(_asks_availability, dict)
    found = known.get(test)
    if found is None:
        direct = pickers.mentions_availability(model, test, follow=False)
        found = known[test] = (direct, frozenset(flag_names(model, test)))
    return found


def _sites(model: ScriptModel, inside: set[int], flags: frozenset[str]):
    """(node, flag) for every other test that asks about availability, and every other read
    of the picker's flags: the node is the test, or the read itself outside a test."""
    seen: set[int] = set()
    for node, direct, names in _availability_tests(model):
        if id(node) in inside:
            continue
        flag = next(iter(sorted(names & flags)), None) if not direct else None
        seen.update(id(n) for n in ast.walk(node.test))
        yield node.test, flag
    for name in flags:
        for n in _flag_loads(model, name):
            if id(n) not in inside and id(n) not in seen:
                yield n, name


def _availability_tests(model: ScriptModel) -> list[tuple[ast.AST, bool, frozenset[str]]]:
    """Every if/while/conditional of the script that asks about availability and is not a
    picker (a picker is converted by its own fix), with what it asks: once per parse, as
    every picker's plan looks at all of them."""

    def compute() -> list[tuple[ast.AST, bool, frozenset[str]]]:
        out = []
        for node in model.nodes_of(ast.If, ast.IfExp, ast.While):
            assert isinstance(node, ast.If | ast.IfExp | ast.While)
            direct, names = _asks_availability(model, node.test)
            if not direct and not names:
                continue
            if _is_picker(model, node) or _elif_of_picker(model, node):
                continue
            out.append((node, direct, names))
        return out

    return model.memo(_availability_tests, compute)


def _is_picker(model: ScriptModel, node: ast.AST | None) -> bool:
    known: dict[ast.AST | None, bool] = model.memo(_is_picker, dict)
    found = known.get(node)
    if found is None:
        found = known[node] = _judge_picker(model, node)
    return found


def _judge_picker(model: ScriptModel, node: ast.AST | None) -> bool:
    if isinstance(node, ast.IfExp):
        return pickers.picker(model, node) is not None
    if isinstance(node, ast.If):
        if pickers.if_picker(model, node) is not None:
            return True
        return any(
            isinstance(s, ast.Assign) and pickers.is_device_value(model, s.value) for s in node.body
        )
    return False


def _elif_of_picker(model: ScriptModel, node: ast.AST) -> bool:
    """An ``elif`` (``elif torch.backends.mps.is_available():``) of an if/elif picker: the
    picker's own fix replaces the whole chain."""
    while isinstance(node, ast.If):
        parent = model.parent(node)
        if not (isinstance(parent, ast.If) and parent.orelse == [node]):
            return False
        if _is_picker(model, parent):
            return True
        node = parent
    return False


def _flag_loads(model: ScriptModel, name: str) -> list[ast.Name]:
    return [n for n in model.name_nodes(name) if isinstance(n.ctx, ast.Load)]


def _site_of(model: ScriptModel, node: ast.AST) -> ast.AST:
    """The whole test a read sits in (``not use_cuda and x``), or the read itself."""
    cur = node
    while True:
        p = model.parent(cur)
        if isinstance(p, ast.BoolOp) or (isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Not)):
            cur = p
            continue
        return cur


def _guarded(model: ScriptModel, test: ast.AST) -> ast.AST | None:
    p = model.parent(test)
    if isinstance(p, ast.If | ast.IfExp | ast.While) and p.test is test:
        return p
    return None


def _harmless(model: ScriptModel, site: ast.AST) -> bool:
    """Code decided by this test that does not matter on the XLA host whichever way it goes:
    messages, CUDA-only settings, speed-only keywords, literal loader options."""
    guard = _guarded(model, site)
    if guard is not None and _needs_several_devices(model, site):
        return True
    if isinstance(guard, ast.If):
        return all(_harmless_statement(model, s) for s in (*guard.body, *guard.orelse))
    if isinstance(guard, ast.IfExp):
        return _inert(model, guard.body) and _inert(model, guard.orelse)
    p = model.parent(site)
    return isinstance(p, ast.keyword) and p.arg in TUNING_KEYWORDS


DTYPES = frozenset(
    f"torch.{t}"
    for t in ("float16", "half", "bfloat16", "float32", "float", "float64", "double", "int64")
)
DEVICE_COUNTS = frozenset({"torch.cuda.device_count", "torch.accelerator.device_count"})


def _needs_several_devices(model: ScriptModel, test: ast.AST) -> bool:
    """``torch.cuda.device_count() > 1`` (alone or and-ed with more): False on a one-GPU CUDA
    host too, so skipping its block beside the device is something the original already does
    (``model = nn.DataParallel(model)``, which XLA110 removes anyway)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_needs_several_devices(model, v) for v in test.values)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(left, ast.Name):  # n_gpu = torch.cuda.device_count()
        values = pickers.flag_values(model, left)
        left = values[0] if len(values) == 1 else left
    if not (isinstance(left, ast.Call) and model.call_name(left) in DEVICE_COUNTS):
        return False
    bound = right.value if isinstance(right, ast.Constant) else None
    if not isinstance(bound, int) or isinstance(bound, bool):
        return False
    return (isinstance(op, ast.Gt) and bound >= 1) or (isinstance(op, ast.GtE) and bound >= 2)


def under_several_devices(model: ScriptModel, node: ast.AST) -> bool:
    """``node`` runs only in the body of an ``if`` that needs several CUDA devices
    (``if torch.cuda.device_count() > 1:``): never on an XLA host or a one-GPU one."""
    child = node
    for parent in model.ancestors(node):
        if (
            isinstance(parent, ast.If)
            and any(s is child for s in parent.body)
            and _needs_several_devices(model, parent.test)
        ):
            return True
        child = parent
    return False


def _harmless_statement(model: ScriptModel, stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.If):
        return all(_harmless_statement(model, s) for s in (*stmt.body, *stmt.orelse))
    return pickers.is_harmless_extra(model, stmt)


def _inert(model: ScriptModel, expr: ast.AST) -> bool:
    """A value built without calls or devices (``{"pin_memory": True}``, ``True``, ``{}``)."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Call | ast.Lambda | ast.NamedExpr):
            return False
        outer = isinstance(n, ast.Name | ast.Attribute) and not isinstance(
            model.parent(n), ast.Attribute
        )
        qualname = model.qualname(n) if outer else None
        if qualname is not None and qualname not in DTYPES:
            return False  # torch.cuda.FloatTensor, a module's object (a dtype is a value)
        if isinstance(n, ast.Name) and "dev" in n.id.lower():
            return False
        if isinstance(n, ast.Attribute) and "dev" in n.attr.lower():
            return False
    return True


def _runs_like_on_cuda(model: ScriptModel, read: ast.Name) -> bool:
    """With the flag true (as on a CUDA host), what this read decides runs on the XLA host
    and needs no CUDA: a test whose branches call nothing CUDA-only, or a speed keyword."""
    site = _site_of(model, read)
    guard = _guarded(model, site)
    if guard is None:
        p = model.parent(site)
        return isinstance(p, ast.keyword) and p.arg in TUNING_KEYWORDS
    branches = (
        [*guard.body, *guard.orelse]
        if isinstance(guard, ast.If | ast.While)
        else [guard.body, guard.orelse]
    )
    return not any(needs_cuda(model, b) for b in branches)


def needs_cuda(model: ScriptModel, node: ast.AST) -> bool:
    """Code that calls CUDA or the accelerator API (fails or differs on an XLA host)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            name = model.call_name(n) or ""
            if name.startswith(("torch.cuda.", "torch.accelerator.", "torch.backends.mps.")):
                if name not in HARMLESS_CUDA_CALLS and not name.endswith(".is_available"):
                    return True
            if method_name(n) == "cuda":
                return True
        if (const_str(n) or "").startswith("cuda"):
            return True
    return False


def _single_assignment(model: ScriptModel, name: str) -> ast.Assign | None:
    """The one ``name = <availability answer>`` of the script, when there is exactly one."""
    assigns = model.assignments.get(name, [])
    if len(assigns) != 1 or not isinstance(assigns[0], ast.Assign):
        return None
    assign = assigns[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
        return None
    value = assign.value
    if pickers.is_availability(model, bool_value(value), follow=False):
        return assign
    flags = pickers.flag_part(model, value)
    return assign if isinstance(flags, list) else None


def _without_availability(model: ScriptModel, value: ast.expr) -> str:
    """``not args.no_accel and torch.accelerator.is_available()`` -> ``not args.no_accel``;
    a pure availability answer -> ``True`` (what a CUDA host computed)."""
    flags = pickers.flag_part(model, value)
    if isinstance(flags, list):
        return " and ".join(model.segment(f) for f in flags)
    return "True"


def _describe(model: ScriptModel, nodes: list, limit: int = 2) -> str:
    parts = []
    for n in nodes[:limit]:
        stmt = model.enclosing_statement(n) or n
        line = getattr(stmt, "lineno", 0)
        parts.append(f"line {line_ref(line)} `{model.line_text(line - 1).strip()[:60]}`")
    more = f" and {len(nodes) - limit} more" if len(nodes) > limit else ""
    return ", ".join(parts) + more
