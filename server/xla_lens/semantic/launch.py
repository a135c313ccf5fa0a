"""Which code runs in the launcher's parent process, before the replicas start.

``torch_xla.launch(_mp_fn)`` / ``xmp.spawn`` refuse to start once the parent has touched the
XLA runtime: ``xr.world_size()``, ``torch_xla.device()`` or ``xm.xla_device()`` at module
level, in an argparse default, or in ``main()`` before the launch raise "Runtime is already
initialized. Do not use the XLA device before calling xmp.spawn" (verified on torch_xla 2.9).
A conversion that writes such a call must therefore know whether the spot runs in a replica
(a function reached from the launch target: a function, a class the launcher builds, or a
bound method, ``xmp.spawn(self._mp_fn, ...)``) or in the parent (everything else).
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import ScriptModel

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
LAUNCHERS = frozenset(
    {
        "torch_xla.launch",
        "torch_xla.distributed.xla_multiprocessing.spawn",
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
    }
)
ENTRY = "_mp_fn"
XLA_LAUNCHERS = frozenset({"torch_xla.launch", "torch_xla.distributed.xla_multiprocessing.spawn"})
# Calls the conversion emits that initialise the XLA runtime when they run.
RUNTIME_CALL = re.compile(
    r"(?<![\w])(?:[A-Za-z_][\w.]*\.)?(?:device|xla_device|world_size|global_ordinal|"
    r"local_ordinal|get_ordinal|get_local_ordinal|xrt_world_size|is_master_ordinal|"
    r"process_index|addressable_device_count|global_runtime_device_count)\(\)"
    # Seeding the XLA generator and printing or saving on the master ordinal (which asks the
    # runtime for the ordinal) acquire the device too (measured on torch_xla 2.9:
    # torch_xla.manual_seed(0) or xm.master_print(...) before xmp.spawn -> "Runtime is already
    # initialized"). A sync is written only into training loops, and a training loop in the
    # parent is the launch's own problem (XLA204 asks to move it), not the sync's.
    r"|(?<![\w])(?:torch_xla|xm|torch_xla\.core\.xla_model)\.(?:manual_seed|set_rng_state|"
    r"master_print|is_master_ordinal|save|rendezvous|wait_device_ops)\("
)
PARENT_REVIEW = (
    "it runs in the launcher's parent process before the replicas start (line {line}): "
    "torch_xla refuses to launch once the parent has used the XLA runtime ('Runtime is "
    "already initialized'); move it into the function each replica runs"
)


def launch_targets(model: ScriptModel, will_add_entry_for: str | None) -> list[FunctionNode]:
    """Functions each replica starts in: ``_mp_fn``, the targets of launch calls, and the
    function a conversion is about to wrap in ``_mp_fn`` (``will_add_entry_for``)."""
    # Launch safety asks this per rule that counts on another's fix: scan the calls once.
    return list(
        model.memo(
            (launch_targets, will_add_entry_for),
            lambda: tuple(_launch_targets(model, will_add_entry_for)),
        )
    )


def _launch_targets(model: ScriptModel, will_add_entry_for: str | None) -> list[FunctionNode]:
    targets: list[FunctionNode] = []
    steps = model.steps
    if ENTRY in steps.module_functions:
        targets.append(steps.module_functions[ENTRY])
    for call in model.calls:
        if model.call_name(call) in LAUNCHERS:
            first = launched_function(model, call)
            handed = _handed_functions(model, call, first) if first is not None else []
            if handed:
                # ``def run_distributed(fn, ...): mp.spawn(fn, ...)`` called with
                # ``run_training`` (WaveGrad, held-out 97): what the callers hand in.
                targets.extend(steps.module_functions[name] for name in handed)
            elif first is not None and first in steps.module_functions:
                targets.append(steps.module_functions[first])
            elif first is not None:
                # ``mp.spawn(Trainer, ...)``: each replica builds the class, whose
                # ``__init__`` runs the training (RobustVideoMatting, held-out 35).
                targets.extend(_class_methods(model, first))
            elif (method := _bound_method(model, call)) is not None:
                targets.append(method)
    if will_add_entry_for and will_add_entry_for in steps.module_functions:
        targets.append(steps.module_functions[will_add_entry_for])
    return targets


def _handed_functions(model: ScriptModel, call: ast.Call, name: str) -> list[str]:
    """The module functions callers pass as parameter ``name`` of the function holding the
    launch ``call`` (a launcher wrapper); [] when ``name`` is no parameter of it."""
    fn = model.enclosing_function(call)
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if name not in params and name not in [a.arg for a in fn.args.kwonlyargs]:
        return []
    index = params.index(name) if name in params else None
    found: list[str] = []
    for caller in model.calls:
        if model.steps.callee(caller) is not fn:
            continue
        value = next((k.value for k in caller.keywords if k.arg == name), None)
        if value is None and index is not None and index < len(caller.args):
            value = caller.args[index]
        if (
            isinstance(value, ast.Name)
            and value.id in model.steps.module_functions
            and value.id not in found
        ):
            found.append(value.id)
    return found


def _class_methods(model: ScriptModel, name: str) -> list[FunctionNode]:
    cls = next((s for s in model.tree.body if isinstance(s, ast.ClassDef) and s.name == name), None)
    if cls is None:
        return []
    return [s for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]


def _bound_method(model: ScriptModel, call: ast.Call) -> FunctionNode | None:
    """``xmp.spawn(self._mp_fn, ...)`` in a method: the class's method each replica runs
    (held-out 183's KoBERT-nsmc Trainer)."""
    fn = (
        call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "fn"), None)
    )
    if isinstance(fn, ast.Call) and model.call_name(fn) == "functools.partial" and fn.args:
        fn = fn.args[0]
    from .calls import self_method  # noqa: PLC0415 (calls imports the model)

    return self_method(model, fn, call) if fn is not None else None


def launched_function(model: ScriptModel, call: ast.Call) -> str | None:
    """The name of the function a launch call starts: its first argument or ``fn=``, seen
    through ``functools.partial(train, ...)``."""
    fn = (
        call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "fn"), None)
    )
    if isinstance(fn, ast.Call) and model.call_name(fn) == "functools.partial" and fn.args:
        fn = fn.args[0]
    return fn.id if isinstance(fn, ast.Name) else None


def _plain_entry_calls(model: ScriptModel, guard: ast.If) -> list[ast.Call]:
    """Statements of the guard's own body that call a function defined at module level."""
    found = []
    for stmt in guard.body:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            continue
        call = stmt.value
        fn = model.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if fn is not None and fn in model.tree.body:
            found.append(call)
    return found


def guard_runs_training_itself(model: ScriptModel, guard: ast.If) -> bool:
    """Whether a training loop sits in the main guard's own code (llm.c's ``__main__`` block
    is the whole program): no single call there is the training a launcher could start."""
    loops = {id(loop.node) for loop in model.training_loops}
    return any(id(n) in loops for stmt in guard.body for n in ast.walk(stmt))


def training_entry_call(model: ScriptModel, guard: ast.If) -> ast.Call | None:
    """The guard's call of the function that runs the training (``main()``, ``main(args)``,
    ``train()``): the one a launcher must start in every replica. None when the training is
    not behind one such call: a loop in the guard itself, a call in a loop or an assignment,
    two calls that each train, or a last call (``print0("done")``) that reaches no training
    loop. A script whose training loops are not visible here (a Trainer, a step in another
    module) keeps its last plain call as the entry."""
    # XLA204 and launch safety ask this again and again of the same guard.
    return model.memo((training_entry_call, guard), lambda: _training_entry_call(model, guard))


def _training_entry_call(model: ScriptModel, guard: ast.If) -> ast.Call | None:
    calls = _plain_entry_calls(model, guard)
    if not calls:
        return None
    loops = model.training_loops
    if not loops:
        return calls[-1]
    if guard_runs_training_itself(model, guard):
        return None
    training = [c for c in calls if _reaches_loop(model, c, loops)]
    return training[0] if len(training) == 1 else None


def _reaches_loop(model: ScriptModel, call: ast.Call, loops: list) -> bool:
    fn = model.functions[call.func.id]  # type: ignore[attr-defined]
    reached = replica_functions(model, [fn])
    return any(
        any(f in reached for f in enclosing_functions_at(model, loop.node.lineno)) for loop in loops
    )


# Libraries whose own launcher starts the XLA processes (no _mp_fn needed).
LAUNCHING_LIBRARIES = frozenset({"accelerate", "lightning", "pytorch_lightning"})


def has_own_launcher(model: ScriptModel) -> bool:
    return any(t.split(".")[0] in LAUNCHING_LIBRARIES for t in model.imports.values())


def awaits_launcher(model: ScriptModel) -> bool:
    """A multi-process script with no XLA launcher yet: the conversion's premise is that one
    starts it (XLA202's env reads become runtime queries because the XLA launcher sets no env
    vars), so its module-level code is the launcher's parent. Decided from the script's shape,
    not from whether it imports torch_xla yet: the fixpoint's first round adds those imports,
    and its second round must see the same parent code the first did (or ``fix`` applies what
    ``check`` said it would not)."""
    return model.is_distributed and not is_launched(model) and not has_own_launcher(model)


def is_launched(model: ScriptModel) -> bool:
    return model.memo(
        is_launched,
        lambda: (
            ENTRY in model.steps.module_functions
            or any(model.call_name(c) in LAUNCHERS for c in model.calls)
        ),
    )


def replica_functions(model: ScriptModel, targets: list[FunctionNode]) -> set[FunctionNode]:
    """Every function of this script a replica may run: the targets and what they call."""
    key = (replica_functions, tuple(targets))
    return set(model.memo(key, lambda: frozenset(_replica_functions(model, targets))))


def _replica_functions(model: ScriptModel, targets: list[FunctionNode]) -> set[FunctionNode]:
    seen: set[FunctionNode] = set()
    todo = list(targets)
    classes = {c.name: c for c in model.nodes_of(ast.ClassDef) if isinstance(c, ast.ClassDef)}
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                callee = model.steps.callee(node)
                if callee is not None and callee not in seen:
                    todo.append(callee)
            # A class the replica instantiates or uses (``GatherAll.apply(z)``, an autograd
            # Function): its methods run in the replica too.
            if isinstance(node, ast.Name) and node.id in classes:
                todo.extend(
                    s
                    for s in classes[node.id].body
                    if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
                )
    return seen


def parent_functions(model: ScriptModel, wrapped: str | None) -> set[FunctionNode]:
    """Functions of this script the launcher's parent process runs before the launch: those
    called ahead of the launch call (in the function holding it, or ahead of a call that
    leads to it), and what they call. A helper both the parent and a replica call is such a
    function: the parent's call is the one that breaks the launch. ``wrapped`` names the entry
    whose call in the main guard a conversion turns into the launch (``_mp_fn``). Calls after
    the launch (``else: train(0)`` when not distributed) are not counted."""
    # Asked by launch safety for every rule that counts on another's fix: walk once.
    key = (parent_functions, wrapped)
    return set(model.memo(key, lambda: frozenset(_parent_functions(model, wrapped))))


def _parent_functions(model: ScriptModel, wrapped: str | None) -> set[FunctionNode]:
    launches_at, launching = _launching(model, wrapped)
    todo: list[FunctionNode] = []
    for scope, line in launches_at.items():
        for node in model.walk_scope(scope):
            if (
                isinstance(node, ast.Call)
                and node.lineno <= line
                and node not in launching
                and not _instead_of_launch(model, node, launching)
            ):
                callee = model.steps.callee(node)
                if callee is not None:
                    todo.append(callee)
    seen: set[FunctionNode] = set()
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for node in model.walk_scope(fn):
            if isinstance(node, ast.Call):
                callee = model.steps.callee(node)
                if callee is not None and callee not in seen:
                    todo.append(callee)
    return seen


def _launching(model: ScriptModel, wrapped: str | None) -> tuple[dict[ast.AST, int], set[ast.Call]]:
    """(scope -> line of its first launching call, the calls that launch or lead to one)."""
    launches_at: dict[ast.AST, int] = {}  # scope -> line of its first launching call
    launching: set[ast.Call] = set()  # its arguments run in the parent, not what it starts
    for call in model.calls:
        name = model.call_name(call)
        is_wrapped = bool(wrapped) and isinstance(call.func, ast.Name) and call.func.id == wrapped
        if name in LAUNCHERS or (is_wrapped and model.is_module_level(call)):
            scope = model.enclosing_function(call) or model.tree
            launches_at[scope] = min(launches_at.get(scope, call.lineno), call.lineno)
            launching.add(call)
    # Scopes that reach a launch through a call of a function that launches (main()).
    changed = True
    while changed:
        changed = False
        for call in model.calls:
            callee = model.steps.callee(call)
            if callee is None or callee not in launches_at:
                continue
            scope = model.enclosing_function(call) or model.tree
            if call not in launching:
                launching.add(call)
                changed = True
            if call.lineno < launches_at.get(scope, call.lineno + 1):
                launches_at[scope] = call.lineno
                changed = True
    return launches_at, launching


def _run_instead_of_launch(model: ScriptModel, fn: FunctionNode) -> bool:
    """Every call of ``fn`` in this file sits in one branch of an ``if`` whose other branch
    launches (cift-markets' ``if args.single: train_single_device() else:
    train_multi_device()``, held-out 107's control): the process that runs it launches
    nothing, so it is no launcher's parent."""

    def compute() -> bool:
        _, launching = model.memo((_launching, None), lambda: _launching(model, None))
        calls = _calls_by_callee(model).get(id(fn), [])
        return bool(calls) and all(_instead_of_launch(model, c, launching) for c in calls)

    return model.memo((_run_instead_of_launch, fn), compute)


def _calls_by_callee(model: ScriptModel) -> dict[int, list[ast.Call]]:
    """The calls of this file by the function of this file each runs, once per parse."""

    def compute() -> dict[int, list[ast.Call]]:
        out: dict[int, list[ast.Call]] = {}
        for call in model.calls:
            callee = model.steps.callee(call)
            if callee is not None:
                out.setdefault(id(callee), []).append(call)
        return out

    return model.memo(_calls_by_callee, compute)


def _instead_of_launch(model: ScriptModel, call: ast.Call, launching: set[ast.Call]) -> bool:
    """``if single: _mp_fn(0) else: xmp.spawn(_mp_fn)``: the call sits in one branch of an
    ``if`` whose other branch launches, so the parent that runs it never launches after it."""
    child: ast.AST = call
    for parent in model.ancestors(call):
        if isinstance(parent, ast.If) and child is not parent.test:
            other = parent.orelse if child in parent.body else parent.body
            if any(n in launching for s in other for n in ast.walk(s)):
                return True
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return False
        child = parent
    return False


def enclosing_functions_at(model: ScriptModel, line: int) -> list[FunctionNode]:
    """Functions whose body holds 1-based ``line``, outermost first."""
    starts, ends, functions = model.memo(
        _functions_by_statement, lambda: _functions_by_statement(model)
    )
    # Only the top-level statements around ``line`` can hold it (several when joined by
    # ``;``); top-level statements follow each other, so their ends never decrease.
    i = bisect.bisect_right(starts, line) - 1
    found: list[FunctionNode] = []
    while i >= 0 and ends[i] >= line:
        found.extend(fn for fn in functions[i] if fn.lineno <= line <= (fn.end_lineno or fn.lineno))
        i -= 1
    return sorted(found, key=lambda fn: fn.lineno)


def _functions_by_statement(
    model: ScriptModel,
) -> tuple[list[int], list[int], list[list[FunctionNode]]]:
    """Per top-level statement (first line with decorators, last line): its functions."""
    starts: list[int] = []
    ends: list[int] = []
    for stmt in model.tree.body:
        decorators = getattr(stmt, "decorator_list", ())
        starts.append(min([stmt.lineno] + [d.lineno for d in decorators]))
        ends.append(stmt.end_lineno or stmt.lineno)
    functions: list[list[FunctionNode]] = [[] for _ in starts]
    for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        # A ``def`` never shares its line with another top-level statement (``;`` joins
        # simple statements only): the last one starting at or before it holds it.
        functions[bisect.bisect_right(starts, fn.lineno) - 1].append(fn)  # type: ignore[arg-type,union-attr]
    return starts, ends, functions


def runs_in_parent(
    model: ScriptModel,
    line: int,
    replicas: set[FunctionNode],
    parents: set[FunctionNode] | frozenset[FunctionNode] = frozenset(),
) -> bool:
    """Whether 1-based ``line`` may run in the parent: outside every replica function (module
    level, the main guard, a function only the parent calls), or in a function of
    ``parents`` (``parent_functions``) even if a replica calls it too."""
    enclosing = enclosing_functions_at(model, line)
    if enclosing and enclosing[-1] in parents:
        return True
    if enclosing and not any(fn in parents for fn in enclosing):
        if _run_instead_of_launch(model, enclosing[0]):
            return False
    return not any(fn in replicas for fn in enclosing)


def emits_runtime_call(code: str) -> bool:
    return RUNTIME_CALL.search(code) is not None
