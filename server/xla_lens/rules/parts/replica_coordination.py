"""XLA204's question before it starts ``main`` once per device: would the replicas cooperate?

``torch_xla.launch(_mp_fn)`` runs the entry function in one process per XLA device, and sets
none of torchrun's environment variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``) nor
SLURM's. Scripts written for torchrun often switch their distributed setup on from those
variables: ``utils.init_distributed_mode(args)`` (DeiT, MAE, apex's ImageNet example) sets
``args.distributed = False`` when they are missing, and DDP, the DistributedSampler and the
rank-0 checkpoint guard all follow that flag. Launched that way, each device trains its own
model on the same data and every process writes the same checkpoint: no error, a different
program. So the launch rewrite is safe only when the coordination is visible here:

- every process-group, DDP/FSDP and DistributedSampler call in reach of the entry function
  (it and the functions of this script it calls) runs unconditionally, or under a test made
  only of ``torch.distributed`` queries;
- the gradients are visibly all-reduced by the script's own code (DDP/FSDP, an all_reduce; not
  ``xm.optimizer_step``, which XLA105's fix writes) or
  the entry function trains nothing visible at all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ...semantic.diskread import read_regular
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ...semantic.node_helpers import iteration_clauses
from ...semantic.steps import FunctionNode
from ...semantic.workspace import MAX_BYTES, module_file
from ..base import Replace, RuleContext
from .env_sentinel import membership_guarded
from .rank_zero_checks import rank_zero_check

INIT = "torch.distributed.init_process_group"
WRAPPERS = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
)
SAMPLERS = (
    "torch.utils.data.DistributedSampler",
    "torch.utils.data.distributed.DistributedSampler",
)
GRADIENT_SYNCS = (
    "torch.distributed.all_reduce",
    "torch_xla.core.xla_model.reduce_gradients",
    # Optimizer wrappers that all-reduce the gradients (learn2learn's cherry, held-out 115).
    "cherry.optim.Distributed",
    "horovod.torch.DistributedOptimizer",
)
# What XLA105's safe fix writes for optimizer.step(): it all-reduces, but it is no sign of how
# the author meant the replicas to cooperate (under torchrun, with nothing else reducing, they
# trained independently), and counting it made the launch safe only after XLA105's round.
FIX_WRITTEN_SYNC = "torch_xla.core.xla_model.optimizer_step"
ENV_KEYS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_")
# Calls whose value is the same question asked of the process group the script starts, or of
# the XLA runtime the launcher starts (XLA202's safe rewrite of a torchrun env check).
GROUP_QUERY_PREFIXES = (
    "torch.distributed.",
    "torch_xla.runtime.",
    "torch_xla.core.xla_model.xrt_world_size",
    "torch_xla.core.xla_model.get_ordinal",
    "torch_xla.core.xla_model.get_local_ordinal",
)
# Entry function -> helper -> helper: deep enough for main -> setup_ddp -> init.
MAX_DEPTH = 4


def _env_key(text: object) -> bool:
    return isinstance(text, str) and any(
        text == k or (k.endswith("_") and text.startswith(k)) for k in ENV_KEYS
    )


def _reads_env(model: ScriptModel | None, node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and _env_key(n.value):
            return True
        if isinstance(n, ast.Attribute) and n.attr == "environ":
            return True
        if model is not None and isinstance(n, ast.Call):
            if (model.call_name(n) or "") in ("os.getenv", "os.environ.get"):
                return True
    return False


def _reach(
    model: ScriptModel, entry: FunctionNode
) -> Iterator[tuple[FunctionNode, list[ast.expr]]]:
    """The entry function and the functions of this script it calls, each with the tests
    that gate the call leading there (``if args.distributed: setup()``)."""
    classes = {s.name: s for s in model.tree.body if isinstance(s, ast.ClassDef)}
    seen = {entry}
    todo: list[tuple[FunctionNode, list[ast.expr], int]] = [(entry, [], 0)]
    while todo:
        fn, tests, depth = todo.pop(0)
        yield fn, tests
        if depth >= MAX_DEPTH:
            continue
        for node in model.walk_scope(fn):
            if not isinstance(node, ast.Call):
                continue
            target = model.steps.callee(node)
            targets = [target] if target is not None else []
            if isinstance(node.func, ast.Name) and node.func.id in classes:
                # ``Trainer(model, ...)``: its methods (``__init__`` wrapping the model in DDP,
                # ``train``) run on what the entry function built.
                targets = [
                    m
                    for m in classes[node.func.id].body
                    if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
            for t in targets:
                if t not in seen:
                    seen.add(t)
                    todo.append((t, tests + _gates(model, node, fn), depth + 1))


def _bare_return(stmt: ast.stmt) -> bool:
    """``if not args.distributed: print(...); return``: a branch that only leaves (not
    ``if args.evaluate: validate(); return``, which does work of its own first)."""
    if not (isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], ast.Return)):
        return False
    return all(
        isinstance(s, ast.Return | ast.Assign | ast.Pass)
        or (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Name)
            and s.value.func.id == "print"
        )
        for s in stmt.body
    )


def _both_branches(model: ScriptModel, parent: ast.If | ast.IfExp, name: str) -> bool:
    """``DDP(m, device_ids=[gpu]) if gpu is not None else DDP(m)``: both ways run ``name``
    (for a sampler, both ways build some sampler: ``RASampler(...) if aug else
    DistributedSampler(...)``)."""
    branches = [parent.body, parent.orelse]

    def same(call: ast.Call) -> bool:
        called = model.call_name(call) or ""
        return called == name or (name in SAMPLERS and called.endswith("Sampler"))

    return all(
        any(
            isinstance(n, ast.Call) and same(n)
            for part in (b if isinstance(b, list) else [b])
            for n in ast.walk(part)
        )
        for b in branches
    )


class _Unless(ast.UnaryOp):
    """A gate met when its test is false: ``node`` sits in the ``else`` branch, or after an
    ``if test: return`` (``how``). It walks like ``not test``, and its text is the test's,
    so the reason can say which way round it is."""

    def __init__(self, test: ast.expr, how: str) -> None:
        super().__init__(op=ast.Not(), operand=test)
        ast.copy_location(self, test)
        self.how = how


def _gates(model: ScriptModel, node: ast.AST, scope: ast.AST, name: str = "") -> list[ast.expr]:
    """The ``if``/conditional-expression tests ``node`` is nested under, up to ``scope``
    (not those whose other branch runs ``name`` too); the ``else`` side as ``_Unless``."""
    found: list[ast.expr] = []
    child = node
    for parent in model.ancestors(node):
        if isinstance(parent, ast.If | ast.IfExp) and child is not parent.test:
            if not (name and _both_branches(model, parent, name)):
                in_else = (
                    child in parent.orelse
                    if isinstance(parent, ast.If)
                    else (child is parent.orelse)
                )
                found.append(_Unless(parent.test, "else") if in_else else parent.test)
        # ``if not args.distributed: return`` earlier in the same block gates what follows.
        for block in ("body", "orelse", "finalbody"):
            stmts = getattr(parent, block, None)
            if isinstance(stmts, list) and child in stmts:
                found.extend(
                    _Unless(s.test, "return")
                    for s in stmts[: stmts.index(child)]
                    if _bare_return(s)
                )
        if parent is scope:
            break
        child = parent
    return found


def _in_call_name(model: ScriptModel, node: ast.Attribute) -> bool:
    """``torch.distributed`` inside ``torch.distributed.is_initialized()``."""
    top: ast.AST = node
    while isinstance(model.parent(top), ast.Attribute):
        top = model.parent(top)  # type: ignore[assignment]
    parent = model.parent(top)
    return isinstance(parent, ast.Call) and parent.func is top


def _bindings(fn: FunctionNode, name: str) -> list[ast.expr]:
    return [
        n.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    ]


def _env_checks_rewritten(model: ScriptModel) -> list:
    """Spans XLA202's safe fixes rewrite into runtime queries (``int(os.environ.get("RANK",
    -1)) != -1`` becomes ``xr.world_size() > 1``): once fixed, such a test asks the XLA
    runtime the launcher starts, not torchrun's environment."""
    from .. import xla202_rank_world_size as rank_rule  # a sibling rule, imported when asked

    def compute() -> list:
        try:
            found = list(rank_rule.check(model, RuleContext(target="modern")))
        except Exception:
            return []  # the engine reports XLA202's crash; nothing is proven rewritten here
        return [
            op.span
            for f in found
            if f.fix is not None
            and f.fix.safe
            and not model.silenced(f.code, f.span.start.line, f.span.end.line)
            for op in f.fix.ops
            if isinstance(op, Replace)
        ]

    return model.memo(("XLA204", "env checks XLA202 rewrites"), compute)


def _coordinated_test(model: ScriptModel, test: ast.expr, fn: FunctionNode) -> bool:
    """A test made only of ``torch.distributed`` queries, constants, and names bound to them
    in the same function (``world_size = dist.get_world_size()``), or an env check that
    XLA202's safe fix turns into an XLA runtime query."""
    rewritten = _env_checks_rewritten(model)
    if rewritten and any(r.contains(model.span(test)) for r in rewritten):
        return True
    for n in ast.walk(test):
        if (
            rewritten
            and isinstance(n, ast.expr)
            and any(r.contains(model.span(n)) for r in rewritten)
        ):
            continue  # its own parts are checked by the walk, and are inside the span too
        if isinstance(n, ast.Call):
            if not (model.call_name(n) or "").startswith(GROUP_QUERY_PREFIXES):
                return False
        elif isinstance(n, ast.Attribute) and not _in_call_name(model, n):
            return False
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            if isinstance(model.parent(n), ast.Attribute) or n.id in model.imports:
                continue
            values = _bindings(fn, n.id)
            if not values or not all(_coordinated_test(model, v, fn) for v in values):
                return False
    return True


def _helper_reads_env(model: ScriptModel, call: ast.Call) -> bool:
    """``utils.init_distributed_mode(args)`` of a sibling module that reads torchrun's or
    SLURM's environment variables (the module is read, never imported)."""
    name = model.call_name(call) or ""
    module, _, function = name.rpartition(".")
    path = module_file(model.path, module, 0) if module and function else None
    if path is None:
        return False
    try:
        tree = ast.parse(read_regular(path, MAX_BYTES).decode("utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    fns = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    return function in fns and _reads_env(None, fns[function])


def _command_line_setting(model: ScriptModel, test: ast.expr, fn: FunctionNode) -> ast.expr | None:
    """The last value assigned to the flag the gate tests (``opt['dist']``, ``args.ddp``)
    before it, when that value is a command-line option (``parser.parse_args().dist``, or an
    attribute of a name bound to ``parse_args()``)."""
    flags = {ast.unparse(n) for n in ast.walk(test) if isinstance(n, ast.Attribute | ast.Subscript)}
    if not flags:
        return None
    values = [
        n.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign)
        and n.lineno < test.lineno
        and any(ast.unparse(t) in flags for t in n.targets)
    ]
    if not values:
        return None
    last = max(values, key=lambda v: v.lineno)
    if any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "parse_args"
        for n in ast.walk(last)
    ):
        return last
    root = last
    while isinstance(root, ast.Attribute):
        root = root.value
    if isinstance(root, ast.Name) and root is not last:
        bound = model.assigned_from(root.id)
        if bound and all(
            isinstance(v, ast.Call) and getattr(v.func, "attr", None) == "parse_args" for v in bound
        ):
            return last
    return None


def _binds_one_of(model: ScriptModel, call: ast.Call, names: set[str]) -> bool:
    parent = model.parent(call)
    return isinstance(parent, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id in names for t in parent.targets
    )


def _gate_reason(model: ScriptModel, test: ast.expr, fn: FunctionNode, what: str) -> str:
    text = model.segment(test)[:60]
    # Which way round: `if X` holds it, or the else of `if X`, or what follows `if X: return`.
    where = f"under `if {text}`"
    if isinstance(test, _Unless):
        where = (
            f"in the `else:` of `if {text}`" if test.how == "else" else f"after `if {text}: return`"
        )
    flags = {ast.unparse(n) for n in ast.walk(test) if isinstance(n, ast.Name | ast.Attribute)}
    flag_values = [
        n.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and any(ast.unparse(t) in flags for t in n.targets)
    ]
    if _reads_env(model, test) or any(_reads_env(model, v) for v in flag_values):
        return (
            f"{what} runs only {where}, which depends on torchrun's environment "
            "variables, and the XLA launcher sets none of them"
        )
    option = _command_line_setting(model, test, fn)
    if option is not None:
        # ``opt['dist'] = parser.parse_args().dist`` (KAIR, held-out 177): the flag is the
        # user's option, not a helper's reading of the environment.
        return (
            f"{what} runs only {where}, set on line {line_ref(option.lineno)} from a "
            f"command-line option (`{model.segment(option)[:50]}`) that the XLA launcher "
            "neither passes nor replaces: without it the replicas train apart, and the "
            "distributed set-up it turns on follows torchrun's environment variables, which "
            "the XLA launcher does not set"
        )
    # ``distributed = args.local_rank >= 0`` (HRNet, held-out 140): torch.distributed.launch
    # passes --local_rank; the XLA launcher passes nothing, so the option keeps its default.
    rank_option = next(
        (
            v
            for v in flag_values
            if any(isinstance(n, ast.Attribute) and "rank" in n.attr.lower() for n in ast.walk(v))
        ),
        None,
    )
    if rank_option is not None:
        return (
            f"{what} runs only {where}, set on line {line_ref(rank_option.lineno)} "
            f"(`{model.segment(rank_option)[:50]}`) from a rank option that torchrun or "
            "torch.distributed.launch passes and the XLA launcher does not: it keeps its default"
        )
    # A flag such as args.distributed: who sets it? A helper of another module that reads
    # the environment is the DeiT/MAE shape.
    # Only a helper handed the flag's holder can set it (``init_distributed_mode(args)``
    # for ``args.distributed``; not ``seed_everything(args.seed)``: held-out 59).
    holders = {
        n.value.id
        for n in ast.walk(test)
        if isinstance(n, ast.Attribute | ast.Subscript) and isinstance(n.value, ast.Name)
    }
    flag_owner = next(
        (
            c
            for c in model.walk_scope(fn)
            if isinstance(c, ast.Call)
            and model.steps.callee(c) is None
            and c.lineno < test.lineno
            and (
                any(
                    isinstance(a, ast.Name) and a.id in holders
                    for a in (*c.args, *(k.value for k in c.keywords))
                )
                or _binds_one_of(model, c, holders)  # ``opt = option.parse(...)`` (KAIR)
            )
            and _helper_reads_env(model, c)
        ),
        None,
    )
    if flag_owner is not None:
        helper = model.segment(flag_owner.func)
        return (
            f"{what} runs only {where}, set by {helper}() (another module), which "
            "reads torchrun's environment variables, and the XLA launcher sets none of them"
        )
    return (
        f"{what} runs only {where}, set out of the analysis's sight (such a flag "
        "usually follows torchrun's environment variables, which the XLA launcher does not set)"
    )


def _required_env_read(model: ScriptModel, fn: FunctionNode) -> ast.Subscript | None:
    """``os.environ["RANK"]`` (or ``os.environ[key] for key in ("RANK", ...)``) in replica
    code that no safe XLA202 fix rewrites: under the XLA launcher it raises KeyError."""
    rewritten = _env_checks_rewritten(model)
    for node in model.walk(fn):  # comprehensions included
        if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)):
            continue
        if model.qualname(node.value) != "os.environ":
            continue
        key = node.slice
        keys: list[object] = []
        if isinstance(key, ast.Constant):
            keys = [key.value]
        elif isinstance(key, ast.Name):
            # ``{k: os.environ[k] for k in ("RANK", ...)}`` or a for loop over such a tuple.
            for a in model.ancestors(node):
                for loop in iteration_clauses(a):
                    bound = isinstance(loop.target, ast.Name) and loop.target.id == key.id
                    if bound and isinstance(loop.iter, ast.Tuple | ast.List):
                        keys = [e.value for e in loop.iter.elts if isinstance(e, ast.Constant)]
                if keys:
                    break
        if (
            any(_env_key(k) for k in keys)
            and not any(r.contains(model.span(node)) for r in rewritten)
            and not membership_guarded(model, node)
        ):
            return node
    return None


FAILS_AT_ONCE = "each replica would fail at once"


def independent_replicas(model: ScriptModel, entry: FunctionNode) -> str | None:
    """Why the processes the launcher starts in ``entry`` would train independently (or fail
    at once), or None when their coordination is visible."""
    for fn, _tests in _reach(model, entry):
        read = _required_env_read(model, fn)
        if read is not None:
            return (
                f"{FAILS_AT_ONCE}: line {line_ref(read.lineno)} reads "
                f"`{model.segment(read)[:50]}` of torchrun's environment, which the XLA "
                "launcher does not set (KeyError); ask the XLA runtime instead "
                "(xr.global_ordinal(), xr.local_ordinal(), xr.world_size())"
            )
    inits: list[tuple[ast.Call, FunctionNode, list[ast.expr]]] = []
    wrappers: list[tuple[ast.Call, FunctionNode, list[ast.expr]]] = []
    gated: list[tuple[ast.Call, FunctionNode, ast.expr]] = []
    grad_sync = trains = False
    written_sync: ast.Call | None = None
    sibling_group = None  # a sibling module's function that starts the process group
    for fn, outer in _reach(model, entry):
        for node in model.walk_scope(fn):
            if isinstance(node, ast.Call):
                name = model.call_name(node) or ""
                if name == INIT or name in WRAPPERS or name in SAMPLERS:
                    own = _gates(model, node, fn, name)
                    tests = outer + own
                    # The gate named is the nearest one (DDP under `if args.local_rank != -1`
                    # in train(), itself called under `if args.do_train`: held-out 59).
                    bad = next(
                        (t for t in [*own, *outer] if not _coordinated_test(model, t, fn)), None
                    )
                    if bad is not None:
                        gated.append((node, fn, bad))
                    elif name == INIT:
                        inits.append((node, fn, tests))
                    elif name in WRAPPERS:
                        wrappers.append((node, fn, tests))
                # An all_reduce of a metric is not gradient averaging.
                grad_sync |= name in GRADIENT_SYNCS and (
                    name != "torch.distributed.all_reduce" or "grad" in model.segment(node)
                )
                if name == FIX_WRITTEN_SYNC and written_sync is None:
                    written_sync = node
                trains |= model._is_step_call(node) or name.startswith("torch.optim.")
                facts = model.steps.external(node)
                trains |= facts is not None and facts.kind in ("step", "epoch")
                if facts is not None and facts.group_line and sibling_group is None:
                    sibling_group = facts
    prefix = "the replicas would train independently: "
    if wrappers:
        # A wrapper that always runs reduces the gradients; another one under a condition
        # (DINO's teacher, wrapped only when it has batch norms) takes nothing away from it.
        gated = [g for g in gated if (model.call_name(g[0]) or "") not in WRAPPERS]
    if gated:
        # DDP gated is the clearest sign (no all-reduce), then the process group, then data.
        def rank(g: tuple[ast.Call, FunctionNode, ast.expr]) -> tuple[int, int]:
            name = model.call_name(g[0]) or ""
            return (0 if name in WRAPPERS else 1 if name == INIT else 2, g[0].lineno)

        node, fn, test = min(gated, key=rank)
        what = f"{model.call_name(node).rsplit('.', 1)[-1]} (line {line_ref(node.lineno)})"  # type: ignore[union-attr]
        check = rank_zero_check(model)
        also = (
            f"; and without a process group every replica is rank 0 to torch.distributed, so "
            f"`{model.segment(check)[:40]}` (line {line_ref(check.lineno)}) holds in each: all "
            "of them write the logs and checkpoints"
            if check is not None
            else ""
        )
        return prefix + _gate_reason(model, test, fn, what) + also
    if (wrappers or grad_sync) and not inits and sibling_group is not None:
        where = f"{Path(sibling_group.module).name}:{sibling_group.group_line}"
        return (
            f"the process group is started by {sibling_group.name}() ({where}), in another "
            "module: check there that it takes the XLA runtime's ranks (torch_xla's launcher "
            "sets none of torchrun's variables) before launching this way"
        )
    if (wrappers or grad_sync) and not inits:
        return (
            prefix + "the process group is not started where the analysis can see it "
            "(no init_process_group in reach of the entry function)"
        )
    if trains and not (wrappers or grad_sync):
        if written_sync is not None:
            return (
                "nothing of the script's own all-reduces the gradients (no DDP/FSDP wrapper or "
                "all_reduce in reach of the entry function): the only reduction is "
                f"xm.optimizer_step (line {line_ref(written_sync.lineno)}), which XLA105's fix writes for "
                "optimizer.step(); under torchrun the processes trained independently, launched "
                "they would average their gradients: check that data-parallel training is meant"
            )
        return (
            prefix + "nothing visible all-reduces the gradients (no DDP/FSDP wrapper, "
            "xm.optimizer_step or all_reduce in reach of the entry function)"
        )
    return None
