"""XLA204's spawn conversion, when the spawn hands the CUDA device count to the launched
function (vits: ``n_gpus = torch.cuda.device_count(); mp.spawn(run, nprocs=n_gpus,
args=(n_gpus, hps))``, and ``run(rank, n_gpus, hps)`` uses it as the world size of
``init_process_group`` and of its ``DistributedSampler``).

On an XLA host there is no CUDA: the count is 0. Carried on unchanged into
``torch_xla.launch(run, args=(n_gpus, hps))``, every replica asks for a world of 0 processes
("TCPStore world size cannot be 0", ``num_replicas=0``), verified on torch_xla 2.9. The
launcher starts one process per XLA device, as ``nprocs=n_gpus`` started one per GPU: the
number ``run`` was given is, on XLA, the runtime's world size. So where the count is also the
spawn's ``nprocs`` (it counted the processes started) and the parameter that receives it is a
named one of a function defined here that nothing else calls, the fix rebinds that parameter
from the runtime at the top of the function (``n_gpus = xr.world_size()``; legacy
``xm.xrt_world_size()``): every use of it then reads the launcher's count. Elsewhere the
review reason names the argument and what to do.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...semantic import xla_api
from ...semantic.line_refs import line_ref
from ...semantic.loop_frames import scope_of
from ...semantic.model import Emitter, ScriptModel
from ...semantic.reaching import whole_bindings
from ..base import EditOp, InsertBefore, RuleContext

COUNTS = frozenset({"torch.cuda.device_count", "torch.accelerator.device_count"})


@dataclass(frozen=True)
class CountArgs:
    """What the fix does about device counts in the spawn's args: extra edits and a note for
    the review reason ("" when no argument is a device count)."""

    ops: tuple[EditOp, ...] = ()
    note: str = ""
    # Lines where the parent computes from the count outside the spawn: no fix while any.
    blocked: str = ""


def _count_of(model: ScriptModel, node: ast.expr) -> tuple[str, str] | None:
    """``(shown, call)`` when ``node`` is ``torch.cuda.device_count()`` itself or a name every
    binding of which in the spawn's frame (or, bound nowhere there, at module level) is that
    call (not a parameter there); else None."""
    if isinstance(node, ast.Call) and model.call_name(node) in COUNTS:
        return model.segment(node), model.segment(node)
    if not isinstance(node, ast.Name):
        return None
    scope = scope_of(model, node)
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        a = scope.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
        if any(p is not None and p.arg == node.id for p in params):
            return None
    values = [value for _, value in whole_bindings(model, scope, node.id)]
    if not values and scope is not model.tree:
        # Not bound in the spawning function: Python reads the module's global.
        values = [value for _, value in whole_bindings(model, model.tree, node.id)]
    if values and all(isinstance(v, ast.Call) and model.call_name(v) in COUNTS for v in values):
        return f"`{node.id}`", f"{model.call_name(values[0])}()"
    return None


def _same_count(model: ScriptModel, nprocs: ast.expr | None, elt: ast.expr) -> bool:
    """Whether ``nprocs`` is the count passed as ``elt``: the same name, or both the call."""
    if nprocs is None:
        return False
    if isinstance(elt, ast.Name):
        return isinstance(nprocs, ast.Name) and nprocs.id == elt.id
    return isinstance(nprocs, ast.Call) and _count_of(model, nprocs) is not None


def _first_statement(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt | None:
    """Where the runtime read goes: after the docstring and leading global/nonlocal lines."""
    for i, stmt in enumerate(fn.body):
        docstring = (
            i == 0
            and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        )
        if not (docstring or isinstance(stmt, ast.Global | ast.Nonlocal)):
            return stmt
    return None


def _only_launched(model: ScriptModel, name: str, spawn: ast.Call) -> bool:
    """``name`` is read nowhere but as the spawn's function: no direct call (``run(0, 1)``
    when not distributed) would get the runtime's count instead of its argument."""
    return not any(
        isinstance(n.ctx, ast.Load) and n is not spawn.args[0] for n in model.name_nodes(name)
    )


def device_count_args(
    model: ScriptModel,
    ctx: RuleContext,
    spawn: ast.Call,
    args: ast.expr | None,
    nprocs: ast.expr | None,
    e: Emitter,
) -> CountArgs:
    """Edits and review note for the device counts among the spawn's ``args`` tuple."""
    if not isinstance(args, ast.Tuple):
        return CountArgs()
    fn_node = spawn.args[0] if spawn.args else None
    fn = model.functions.get(fn_node.id) if isinstance(fn_node, ast.Name) else None
    fn_name = fn_node.id if isinstance(fn_node, ast.Name) else "the launched function"
    positional = [*fn.args.posonlyargs, *fn.args.args] if fn is not None else []
    runtime = xla_api.world_size(Emitter(model), ctx.target)
    ops: list[EditOp] = []
    notes: list[str] = []
    rebound: list[str] = []
    for i, elt in enumerate(args.elts):
        count = _count_of(model, elt)
        if count is None:
            continue
        shown = count[0] if count[0] == count[1] else f"{count[0]} ({count[1]})"
        param = positional[i + 1].arg if fn is not None and i + 1 < len(positional) else None
        at = _first_statement(fn) if fn is not None else None
        if (
            param is not None
            and param not in rebound
            and at is not None
            and fn in model.tree.body
            and _same_count(model, nprocs, elt)
            and _only_launched(model, fn.name, spawn)
        ):
            code = xla_api.world_size(e, ctx.target)
            ops.append(InsertBefore(model.span(at), f"{param} = {code}"))
            rebound.append(param)
            notes.append(
                f"args[{i}] {shown} is 0 on an XLA host and {fn_name}() takes it as `{param}`: "
                f"the fix sets {param} = {runtime} at the top of {fn_name}() (the XLA launcher "
                "starts one process per device, as nprocs started one per GPU; the count is "
                "over all hosts)"
            )
        else:
            target = f"`{param}` in {fn_name}()" if param else f"it in {fn_name}()"
            notes.append(
                f"args[{i}] {shown} is 0 on an XLA host (no CUDA), and {fn_name}() gets it as "
                f"passed: where it is the world size, read {target} from {runtime} instead"
            )
    blocked = ", ".join(
        u
        for u in (parent_uses(model, spawn, args, nprocs), _carried_on_objects(model, spawn, args))
        if u
    )
    return CountArgs(tuple(ops), "; ".join(notes), blocked)


def _carried_on_objects(model: ScriptModel, spawn: ast.Call, args: ast.Tuple) -> str:
    """``args.nprocs = torch.cuda.device_count()`` in the spawning frame with ``args`` itself
    in the spawn's args tuple: the 0 of an XLA host reaches every replica inside the object
    (held-out 41: ``world_size=args.nprocs``, ``batch_size / args.nprocs`` in the worker), so
    no launch fix can carry it. As ``line N (`code`)``; "" when none."""
    passed = {e.id for e in args.elts if isinstance(e, ast.Name)}
    if not passed:
        return ""
    scope = scope_of(model, spawn)
    lines: dict[int, str] = {}
    for node in ast.walk(scope):
        if not isinstance(node, ast.Assign) or scope_of(model, node) is not scope:
            continue
        if not (isinstance(node.value, ast.Call) and model.call_name(node.value) in COUNTS):
            continue
        for t in node.targets:
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id in passed
            ):
                lines.setdefault(node.lineno, model.segment(node).splitlines()[0].strip()[:70])
    return ", ".join(f"line {line_ref(n)} (`{code}`)" for n, code in sorted(lines.items()))


def parent_uses(
    model: ScriptModel, spawn: ast.Call, args: ast.Tuple, nprocs: ast.expr | None
) -> str:
    """The parent's other reads of a device count it hands the spawn (``args.world_size =
    n * args.world_size``, ``main_worker(args.gpu, n, args)``), or another count call in the
    spawning frame, as ``line N (`code`)``: "" when none."""
    given = [e for e in (*args.elts, nprocs) if e is not None]
    names = {e.id for e in given if isinstance(e, ast.Name) and _count_of(model, e) is not None}
    if not names and not any(_count_of(model, e) is not None for e in given):
        return ""
    scope = scope_of(model, spawn)
    inside = {id(n) for n in ast.walk(spawn)}
    bound = {id(value) for name in names for _, value in whole_bindings(model, scope, name)}
    lines: dict[int, str] = {}
    for node in ast.walk(scope):
        if id(node) in inside or scope_of(model, node) is not scope:
            continue
        counted = isinstance(node, ast.Call) and model.call_name(node) in COUNTS
        read = isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load)
        if (counted and id(node) not in bound) or read:
            stmt = model.enclosing_statement(node)
            lines.setdefault(stmt.lineno, model.segment(stmt).splitlines()[0].strip()[:70])
    return ", ".join(f"line {line_ref(n)} (`{code}`)" for n, code in sorted(lines.items()))
