"""XLA113: output every replica repeats in a multi-replica script.

Every replica runs the same per-replica code: an unguarded ``print`` prints once per device,
and an unguarded file write has every replica write the same file at once (a torn or
clobbered file). ``xm.master_print`` prints on the master ordinal only; writes belong under
``if xm.is_master_ordinal():`` (``xm.save`` does that itself for checkpoints, XLA108).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ..semantic.calls import FunctionNode
from ..semantic.device_intent import being_converted, hand_written_xla
from ..semantic.frameworks import ownership
from ..semantic.model import (
    SCOPE_TYPES,
    Emitter,
    ScriptModel,
    arg_or_keyword,
    const_str,
    dotted,
)
from ..semantic.rank_guards import caller_rank_guard, run_function
from ..semantic.replica_paths import per_replica_path
from ..semantic.workspace_print import printed_after_override, replaces_print
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, SetArgs, Severity
from .parts.master_first import master_first_branch
from .xla108_xm_save import _is_state_dict

CODE = "XLA113"
RANKISH = re.compile(
    r"rank|ordinal|master|main_process|process_zero|process_index|is_main|is_primary|is_chief"
    r"|leader",
    re.IGNORECASE,
)
LAUNCHERS = {
    "torch_xla.launch",
    "torch_xla.distributed.xla_multiprocessing.spawn",
    "torch.multiprocessing.spawn",
}
# The local rank under another name (``main_worker(gpu, ...)``; ``if gpu == 0:``).
LOCAL_RANK_NAMES = frozenset({"gpu", "gpu_id", "local_gpu"})
DUMPS = {"json.dump", "pickle.dump", "torch.save", "numpy.save", "numpy.savez", "yaml.dump"}
WRITE_MODES = re.compile(r"[wax]")
REPLICA_WORDS = re.compile(r"rank|ordinal|replica|process|\bgpu|\bdevice", re.IGNORECASE)
PRINT_MANUAL = (
    "guard the print with `if xm.is_master_ordinal():` (xm.master_print takes no sep=/end=)"
)
WRITE_MANUAL = (
    "write on one replica only: put it under `if xm.is_master_ordinal():` (checkpoints: "
    "xm.save writes on the master only), or name the file after the rank"
)


def _mentions_rank(node: ast.AST | None) -> bool:
    if node is None:
        return False
    for n in ast.walk(node):
        ident = (
            n.id
            if isinstance(n, ast.Name)
            else n.attr
            if isinstance(n, ast.Attribute)
            else n.arg
            if isinstance(n, ast.keyword)
            else None
        )
        if ident is not None and (RANKISH.search(ident) or ident in LOCAL_RANK_NAMES):
            return True
    return False


def _own_file(model: ScriptModel, path: ast.AST | None) -> bool:
    """Whether each replica writes a file of its own (the path carries its rank)."""
    return _mentions_rank(path) or per_replica_path(model, path)


def _names_replica(node: ast.AST) -> bool:
    """Whether printed text names the replica (its rank, device...): each copy differs."""
    for n in ast.walk(node):
        text = const_str(n) if isinstance(n, ast.Constant) else None
        ident = (
            n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        )
        if (text and REPLICA_WORDS.search(text)) or (ident and REPLICA_WORDS.search(ident)):
            return True
    return False


def _chose_own_output(model: ScriptModel) -> bool:
    """Written for torch_xla: API no fix writes, or torch_xla without a CUDA trace or a
    half-converted device (a finished XLA script)."""
    return hand_written_xla(model) or (model.uses_torch_xla and not being_converted(model))


def _replica_functions(model: ScriptModel) -> set[FunctionNode] | None:
    """Functions run per replica: those reachable from the launched function; None when the
    script has no launcher call of its own (torchrun style: all code runs per replica)."""
    roots: list[FunctionNode] = []
    for call in model.calls_to(*LAUNCHERS):
        target = call.args[0] if call.args else None
        if isinstance(target, ast.Name) and target.id in model.functions:
            roots.append(model.functions[target.id])
    if not roots:
        return None
    seen: set[FunctionNode] = set()
    stack = list(roots)
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for n in model.walk_scope(fn):
            if isinstance(n, ast.Call):
                found = run_function(model, n)
                if found is not None:
                    stack.append(found)
    return seen


class Guards:
    """Rank checks of one script, indexed once (a long ``main`` has hundreds of prints)."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self._early_returns: dict[ast.AST, list[int]] = {}

    def guarded(self, node: ast.AST) -> bool:
        """Under a rank check (``if rank == 0``, ``if xm.is_master_ordinal()``...), after an
        early ``return`` for the other replicas, or in a helper or method (``save_checkpoint``,
        ``self._save``) that every call site of this script calls under such a check, one or
        two calls up."""
        guard = caller_rank_guard(self.model, node, self._guard_in_function, every_caller=True)
        return guard is not None or self._built_on_one_rank(node)

    def _built_on_one_rank(self, node: ast.AST) -> bool:
        """In a method of a class this script builds only under a rank check (``if is_root:
        writer = MetricsFile(path)``): its instances, and so its methods, exist on that rank
        alone, however the methods are reached."""
        cls = next((a for a in self.model.ancestors(node) if isinstance(a, ast.ClassDef)), None)
        if cls is None or not self.model.is_module_level(cls):
            return False
        built = [
            c for c in self.model.calls if isinstance(c.func, ast.Name) and c.func.id == cls.name
        ]
        return bool(built) and all(
            caller_rank_guard(self.model, c, self._guard_in_function, every_caller=True) is not None
            for c in built
        )

    def _guard_in_function(self, node: ast.AST) -> ast.AST | None:
        # The cache the master builds while the others wait at a barrier (master-first).
        cache = master_first_branch(self.model, node, _mentions_rank)
        if cache is not None:
            return cache
        for a in self.model.ancestors(node):
            if isinstance(a, ast.If | ast.IfExp | ast.While) and self._rank_test(a.test):
                return a
            if isinstance(a, ast.BoolOp) and self._rank_test(a):
                return a  # ``is_master and print(...)``
            if isinstance(a, SCOPE_TYPES):
                stmt = self.model.enclosing_statement(node)
                if stmt is not None and any(line < stmt.lineno for line in self._returns(a)):
                    return stmt
                return None
        return None

    def _returns(self, scope: ast.AST) -> list[int]:
        """Lines of ``if <rank check>: return`` in ``scope``."""
        found = self._early_returns.get(scope)
        if found is None:
            found = self._early_returns[scope] = [
                s.lineno
                for s in self.model.walk_scope(scope)
                if isinstance(s, ast.If)
                # ``if rank != 0: return`` or ``if is_master: ... else: return``: either way
                # only some replicas get past it.
                and any(isinstance(b, ast.Return) for b in (*s.body, *s.orelse))
                and self._rank_test(s.test)
            ]
        return found

    def _rank_test(self, test: ast.AST) -> bool:
        """A rank check, also through a name bound to one (``is_root =
        xm.is_master_ordinal(local=False)`` then ``if is_root:``)."""
        if _mentions_rank(test):
            return True
        names = [n.id for n in ast.walk(test) if isinstance(n, ast.Name)]
        for name in names:
            values = self.model.assigned_from(name)
            if values and all(_mentions_rank(v) for v in values):
                return True
        return False


def _in_replica_code(
    model: ScriptModel, node: ast.AST, replica: set[FunctionNode] | None, launches: bool
) -> bool:
    fn = model.enclosing_function(node)
    if fn is None:
        return False  # module level: argument parsing and launching, run once per command
    if replica is None:
        return not launches  # torchrun style; a launched function we cannot see: quiet
    outer = fn
    for a in model.ancestors(node):
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef):
            outer = a
            if a in replica:
                return True
    return outer in replica


def _is_builtin(model: ScriptModel, call: ast.Call, name: str) -> bool:
    f = call.func
    return (
        isinstance(f, ast.Name)
        and f.id == name
        and model.qualname(f) is None
        and name not in model.functions
        and name not in model.assignments
    )


def _print_fix(model: ScriptModel, call: ast.Call, ctx: RuleContext) -> Fix | None:
    e = Emitter(model)
    new_keywords = []
    for kw in call.keywords:
        if kw.arg == "file":
            new_keywords.append(("fd", kw))
        elif kw.arg == "flush" and ctx.target == "modern":
            new_keywords.append(("flush", kw))
        else:
            return None  # sep=, end=, **kw: master_print has no such parameter
    ops = [Replace(model.span(call.func), f"{e.xm}.master_print")]
    if any(name != kw.arg for name, kw in new_keywords):
        args = [model.segment(a) for a in call.args]
        args += [f"{name}={model.segment(kw.value)}" for name, kw in new_keywords]
        ops.append(SetArgs(model.span(call), ", ".join(args)))
    title = f"Print on the master ordinal only ({e.xm}.master_print)"
    if _names_replica(call):
        reason = (
            "the message names the replica (rank, ordinal, device): on the master only, the "
            "other replicas' lines are lost"
        )
        return Fix(title, (*ops, *e.imports), safe=False, review_reason=reason)
    return Fix(title, (*ops, *e.imports))


def _writes(model: ScriptModel) -> Iterator[tuple[ast.Call, str]]:
    for call in model.calls:
        if _is_builtin(model, call, "open"):
            mode = const_str(arg_or_keyword(call, 1, "mode"))
            path = arg_or_keyword(call, 0, "file")
            if mode and WRITE_MODES.search(mode) and not _own_file(model, path):
                if not _lock_file(model, call, path):
                    yield call, "open(..., " + repr(mode) + ")"
            continue
        name = model.call_name(call)
        if name not in DUMPS:
            continue
        if name == "torch.save" and (
            _is_state_dict(model, arg_or_keyword(call, 0, "obj"))
            or _own_file(model, arg_or_keyword(call, 1, "f"))
        ):
            continue  # XLA108 makes it xm.save (master only); per-rank paths are meant
        if name in {"json.dump", "pickle.dump", "yaml.dump"} and _inside_open_write(model, call):
            continue  # the open() it writes to is reported
        if _in_memory(model, _destination(call, name)):
            continue  # torch.save(obj, io.BytesIO()) to upload it: each replica has its own
        if _own_file(model, _destination(call, name)):
            continue  # a file per replica, named after its rank
        yield call, (dotted(call.func) or name) + "(...)"


LOCKS = frozenset({"fcntl.lockf", "fcntl.flock"})


def _lock_file(model: ScriptModel, call: ast.Call, path: ast.AST | None) -> bool:
    """``fd = open("tpu.lock", "w")`` then ``fcntl.lockf(fd, LOCK_EX)`` (recipenlg, held-out
    139): a lock every replica opens on purpose, to take turns; under the master ordinal
    only, the others would no longer wait. Evidence: the handle is locked with fcntl, or the
    path is a ``.lock`` file."""
    literals = [const_str(path)]
    if isinstance(path, ast.Name):
        literals += [const_str(v) for v in model.assigned_from(path.id)]
    if any(text and text.endswith(".lock") for text in literals):
        return True
    parent = model.parent(call)
    handle = None
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        handle = parent.targets[0]
    elif isinstance(parent, ast.withitem):
        handle = parent.optional_vars
    if not isinstance(handle, ast.Name):
        return False
    for lock in model.calls_to(*LOCKS):
        first = lock.args[0] if lock.args else None
        if isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute):
            first = first.func.value  # ``fd.fileno()``
        if isinstance(first, ast.Name) and first.id == handle.id:
            return True
    return False


IN_MEMORY = {"io.BytesIO", "io.StringIO"}
# Where each dump writes: (position, keyword).
DESTINATIONS = {
    "torch.save": (1, "f"),
    "json.dump": (1, "fp"),
    "pickle.dump": (1, "file"),
    "yaml.dump": (1, "stream"),
    "numpy.save": (0, "file"),
    "numpy.savez": (0, "file"),
}


def _destination(call: ast.Call, name: str) -> ast.AST | None:
    position, kw = DESTINATIONS[name]
    return arg_or_keyword(call, position, kw)


def _in_memory(model: ScriptModel, target: ast.AST | None) -> bool:
    if isinstance(target, ast.Call):
        return model.call_name(target) in IN_MEMORY
    if isinstance(target, ast.Name):
        values = model.assigned_from(target.id)
        return bool(values) and all(
            isinstance(v, ast.Call) and model.call_name(v) in IN_MEMORY for v in values
        )
    return False


def _inside_open_write(model: ScriptModel, call: ast.Call) -> bool:
    for a in model.ancestors(call):
        if isinstance(a, ast.With | ast.AsyncWith):
            for item in a.items:
                ctx = item.context_expr
                if isinstance(ctx, ast.Call) and _is_builtin(model, ctx, "open"):
                    return True
        if isinstance(a, SCOPE_TYPES):
            return False
    return False


def _reports_an_error(model: ScriptModel, call: ast.Call) -> bool:
    """A print in an ``except`` handler (held-out 54: ``except Exception as e: print(e)`` around
    a torchrun trainer): what failed on that replica. Printed on the master ordinal only, a
    failure of any other replica would leave no trace (the probe's two-replica run: replica 1's
    message disappeared, exit code still 0)."""
    if any(isinstance(a, ast.ExceptHandler) for a in model.ancestors(call)):
        return True
    return _reports_a_missing_value(model, call)


def _reports_a_missing_value(model: ScriptModel, call: ast.Call) -> bool:
    """``if score is not None: ... else: print("pesq is None!")`` (MP-SENet, held-out 144):
    what this replica's own batch gave. Printed on the master only, another replica's would go
    unseen."""
    child: ast.AST = call
    for a in model.ancestors(call):
        if isinstance(a, SCOPE_TYPES):
            return False
        if isinstance(a, ast.If):
            test = a.test
            if (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Is | ast.IsNot)
                and isinstance(test.left, ast.Name)
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None
            ):
                branch = a.body if isinstance(test.ops[0], ast.Is) else a.orelse
                return any(s is child for s in branch)
            return False
        child = a
    return False


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if not model.is_distributed or ownership(model).framework is not None:
        return  # single process; accelerate/Lightning have their own rank-0 helpers
    replica = _replica_functions(model)
    guards = Guards(model)
    launches = any(model.call_name(c) in LAUNCHERS for c in model.calls)
    # A script already written for torch_xla chose its own output (often per replica, in a
    # step closure); only a script being converted gets the print hints. "Written for XLA"
    # must not mean "imports torch_xla": another fix (the device picker, the seed, the world
    # size) adds that import while the prints are still the CUDA script's.
    prints = [] if _chose_own_output(model) else model.calls
    overridden = replaces_print(model)
    for call in prints:
        if not _is_builtin(model, call, "print"):
            continue
        if overridden and printed_after_override(model, call):
            continue  # the script made print master-only before this one runs
        if not _in_replica_code(model, call, replica, launches) or guards.guarded(call):
            continue
        if _reports_an_error(model, call):
            continue  # each replica's own failure: master-only, the others' would vanish
        fix = _print_fix(model, call, ctx)
        message = "print in per-replica code prints once per replica: use xm.master_print"
        yield Finding(
            CODE,
            message,
            model.span(call),
            Severity.INFORMATION,
            fix=fix,
            manual=None if fix is not None else PRINT_MANUAL,
        )
    for call, what in _writes(model):
        if not _in_replica_code(model, call, replica, launches) or guards.guarded(call):
            continue
        yield Finding(
            CODE,
            f"{what} in per-replica code: every replica writes the same file at once",
            model.span(call),
            Severity.WARNING,
            manual=WRITE_MANUAL,
        )


HOVER = """\
**XLA113 · rank-0 output in multi-replica scripts**

Every replica runs the per-replica code (`_mp_fn` and what it calls): an unguarded `print`
prints once per device, and an unguarded file write has every replica write the same file.

| target | print once | write once |
|---|---|---|
| modern (torch_xla ≥ 2.5) | `xm.master_print(...)` | `if xm.is_master_ordinal(): ...` |
| legacy (1.13) | `xm.master_print(...)` | `if xm.is_master_ordinal(): ...` |

Checkpoints: `xm.save(...)` writes on the master only (XLA108). Fix for prints: `print` →
`xm.master_print` (safe; for review when the message names the rank or device). Writes are
reported only: guard them, or name the file after the rank.
"""

RULE = Rule(
    code=CODE,
    name="rank0-io",
    category=Category.DISTRIBUTED,
    summary="print / file writes in per-replica code of a multi-replica script → "
    "xm.master_print, writes under xm.is_master_ordinal()",
    severity=Severity.INFORMATION,
    check=check,
    has_fix=True,
    hover={
        "torch_xla.core.xla_model.master_print": HOVER,
        "torch_xla.core.xla_model.is_master_ordinal": HOVER,
    },
)
