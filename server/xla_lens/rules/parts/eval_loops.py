"""Evaluation loops that XLA107 gives a per-batch sync (held-out 7: pytorch-cifar's ``test()``).

An evaluation loop here is a ``for`` over a torch DataLoader (``loaders.classify`` proves it
PLAIN) that runs with gradients off (inside ``with torch.no_grad()`` / ``inference_mode()`` /
``set_grad_enabled(False)``, or in a function decorated with one of them; or after its
function put a module in eval mode, with no backward pass or step in the loop) and moves its batch
to a device in its body (``.to(...)`` / ``.cuda(...)``), in a script that trains (it has a
training loop) and was not written for XLA by hand. A counter loop (``for i in range(...)``)
that calls a module the script moves to a device counts too: its batches may be slices of a
tensor already there (held-out 23, awd-lstm-lm's ``evaluate()``).

It needs a sync only when nothing in it reads a tensor on the host per batch: then each
batch's forward pass joins one graph that grows until a result is read after the loop (all the
batches in one compile, one execution, the memory of all of them). A per-batch ``.item()`` /
``.cpu()`` / ``float(t)`` already runs the graph each batch: the read is then the site (a
host read, XLA401's question), and a sync here would only add an execution.

Left alone:

- a loop that already syncs (in it, or in a function of this script it calls);
- a loop run from a training loop (in it, or in a function the training loop calls): XLA107's
  ``loop_syncs`` would take a sync there for the training loop's own, though it runs on
  evaluation steps only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.bound_values import bound_values
from ...semantic.calls import class_methods, classes
from ...semantic.cpu_modules import moved_to_cpu
from ...semantic.device_sites import places_a_module
from ...semantic.host_values import host_values
from ...semantic.loaders import Source, classify, iterated_loader
from ...semantic.loop_syncs import loop_syncs, written_for_xla
from ...semantic.model import ScriptModel, TrainingLoop, method_name
from ...semantic.node_helpers import SCOPE_TYPES
from ...semantic.workspace_calls import helper_target
from ...semantic.workspace_classes import class_call
from ...semantic.workspace_regions import regions
from .reporting_calls import formatted

NO_GRAD = frozenset(
    {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.set_grad_enabled"}
)
# Reads that copy a device tensor to the host, so the graph runs right there each batch.
HOST_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
HOST_BUILTINS = frozenset({"float", "int", "bool"})
MOVES = frozenset({"to", "cuda"})
# A loop calling one of these trains, whatever mode its module is in.
TRAINING_CALLS = frozenset({"backward", "step", "train"})


def eval_loops(model: ScriptModel) -> Iterator[ast.For | ast.AsyncFor]:
    """The evaluation loops that need a per-batch sync (no per-batch host read), in source
    order."""
    for loop in evaluation_loops(model):
        if not reads_host(model, loop):
            yield loop


def evaluation_loops(
    model: ScriptModel, handed_in: bool = False
) -> Iterator[ast.For | ast.AsyncFor]:
    """Every evaluation loop XLA107 would judge, with or without host reads (a host-read rule
    may report the per-batch reads of the others: measured on PJRT CPU, two ``.item()`` per
    batch ran the forward pass twice, 12 executions for 6 batches, against 6 with the values
    accumulated on the device and read after the loop). With ``handed_in`` a loop over a
    loader the function is given as a parameter counts too (``for x, y in
    metric_logger.log_every(data_loader, ...)``: a read runs the graph per batch whatever the
    loader is), and so does one the training loop runs (``evaluate()`` every N steps: held-out
    9, LoRA); a sync is added only over a provable DataLoader outside the training loop."""
    if not model.training_loops or written_for_xla(model):
        return
    training = {id(t.node) for t in model.training_loops}
    for loop in model.nodes_of(ast.For, ast.AsyncFor):
        assert isinstance(loop, ast.For | ast.AsyncFor)
        if id(loop) in training:
            continue
        source = classify(model, iterated_loader(model, loop))
        drawn = (
            (handed_in and _counter_drawing_batches(model, loop))
            or _counter_over_placed_module(model, loop)
            or _counter_moving_into_handed_module(model, loop)
        )
        if (
            source is not Source.PLAIN
            and not drawn
            and not (
                handed_in
                and source is Source.UNKNOWN
                and (_parameter_loader(model, loop) or _helper_loader(model, loop))
            )
        ):
            continue
        if not _evaluating(model, loop) or not (
            drawn or _moves_batch(model, loop) or (handed_in and _prepared_as_trained(model, loop))
        ):
            continue
        if not handed_in and _inside(model, loop, _reached_from_training(model)):
            continue  # XLA107's question only (see the module's note); reads are asked too
        if loop_syncs(model, TrainingLoop(loop)):
            continue
        yield loop


def _parameter_loader(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """The loop draws from a parameter of its function, directly or through a wrapping call
    (``metric_logger.log_every(data_loader, 10, header)``, ``tqdm(loader)``)."""
    node = iterated_loader(model, loop)
    fn = next(
        (a for a in model.ancestors(loop) if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)),
        None,
    )
    if fn is None:
        return False
    if isinstance(node, ast.Name) and not _is_parameter(fn, node.id):
        # ``epoch_iterator = tqdm(test_loader, ...)`` then ``enumerate(epoch_iterator)``
        # (held-out 20, ViT-pytorch's valid()): the wrapper built in this function.
        wrappers = [
            a.value
            for a in model.assignments.get(node.id, ())
            if isinstance(a, ast.Assign) and model.enclosing_function(a) is fn
        ]
        if len(wrappers) == 1:
            node = wrappers[0]
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    return isinstance(node, ast.Name) and _is_parameter(fn, node.id)


def _is_parameter(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    a = fn.args
    return name in {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}


def _prepared_as_trained(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """The loop hands its batch to the same method the training loops hand theirs to
    (``x, y = model.parse_batch(batch)``, which moves it in another module: held-out 20,
    tacotron2's validate)."""
    mine = _batch_methods(loop)
    if not mine:
        return False
    return any(mine & _batch_methods(t.node) for t in model.training_loops)


def _batch_methods(loop: ast.AST) -> set[str]:
    """Methods a ``for`` loop calls with its own target name as an argument."""
    target = getattr(loop, "target", None)
    names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} if target else set()
    return {
        n.func.attr
        for stmt in getattr(loop, "body", [])
        for n in ast.walk(stmt)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr not in CONTAINER_METHODS
        and any(isinstance(a, ast.Name) and a.id in names for a in n.args)
    }


# Methods that store or report a value, not prepare a batch.
CONTAINER_METHODS = frozenset(
    {"append", "extend", "update", "add", "insert", "put", "write", "format", "join", "get"}
    | {"pop", "set_description", "set_postfix", "log", "info", "debug", "warning"}
)


def _counter_drawing_batches(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """``for k in range(eval_iters): X, Y = get_batch(split)`` with ``get_batch`` a function
    of this file that moves what it returns to a device (held-out 8 and 20: nanoGPT's and
    ng-video-lecture's ``estimate_loss``)."""
    if not _counts(model, loop):
        return False
    for node in _body_nodes(model, loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fn = model.functions.get(node.func.id)
            if fn is not None and _moves_what_it_returns(model, fn):
                return True
    return False


def _counter_over_placed_module(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """``for i in range(0, n, bptt): output, hidden = model(data, hidden)`` with ``model`` a
    module the script moves to the device (held-out 23 r3, awd-lstm-lm's ``evaluate()``: the
    batches are slices of a tensor already on the device, so no move is in the loop): every
    iteration runs the module on the device."""
    if not _counts(model, loop):
        return False
    moved = _moved_modules(model)
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in moved
        and not moved_to_cpu(model, n.func)  # ``cpu_model = model.to("cpu")``: off XLA
        for n in _body_nodes(model, loop)
    )


def _counter_moving_into_handed_module(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """``for i in tqdm(range(0, len(items), bs)): inputs = torch.LongTensor(...).to(device);
    outputs = model(**inputs)`` with ``model`` a parameter of the function (held-out 80,
    RecFormer's ``encode_all_items``): each slice is moved to the device and run through the
    module it was handed, the outputs collected and concatenated after the loop."""
    if not _counts(model, loop) or not _moves_batch(model, loop):
        return False
    fn = model.enclosing_function(loop)
    if fn is None:
        return False
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and _is_parameter(fn, n.func.id)
        for n in _body_nodes(model, loop)
    )


# Progress bars around a counter: ``tqdm(range(n))`` counts the same.
PROGRESS_WRAPPERS = frozenset({"tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm"})


def _counts(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    it = loop.iter
    if (
        isinstance(it, ast.Call)
        and it.args
        and model.qualname(it.func) in PROGRESS_WRAPPERS
        and isinstance(it.args[0], ast.Call)
    ):
        it = it.args[0]
    return (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "range"
        and "range" not in model.imports
    )


def _moved_modules(model: ScriptModel) -> frozenset[str]:
    """Names of modules the script moves to a device (``model = model.cuda()``,
    ``net = Net().to(device)``)."""

    def build() -> frozenset[str]:
        names = set()
        for call in model.method_calls(*MOVES):
            recv = call.func.value if isinstance(call.func, ast.Attribute) else None
            if isinstance(recv, ast.Name) and places_a_module(model, recv):
                names.add(recv.id)
            stmt = model.parent(call)
            if (
                isinstance(stmt, ast.Assign)
                and stmt.value is call
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and places_a_module(model, recv)
            ):
                names.add(stmt.targets[0].id)
        return frozenset(names)

    return model.memo(_moved_modules, build)


def _moves_what_it_returns(model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    nodes = list(model.walk_scope(fn))
    returns = any(isinstance(n, ast.Return) and n.value is not None for n in nodes)
    moves = any(
        isinstance(n, ast.Call) and method_name(n) in MOVES and isinstance(n.func, ast.Attribute)
        for n in nodes
    )
    return returns and moves


def _helper_loader(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """The loop draws from a name a helper of this file or of the workspace returned
    (``test_loader = get_test_dataloader(...)`` with the helper in a sibling ``utils.py``:
    held-out 16, pytorch-cifar100)."""
    node = iterated_loader(model, loop)
    if not isinstance(node, ast.Name):
        return False
    for value in model.assigned_from(node.id):
        if not isinstance(value, ast.Call):
            continue
        if isinstance(value.func, ast.Name) and value.func.id in model.functions:
            return True
        if helper_target(model, value) is not None:
            return True
    return False


def grad_off(model: ScriptModel, loop: ast.AST) -> bool:
    """Whether ``loop`` runs under ``torch.no_grad()`` / ``inference_mode`` (a ``with`` or a
    decorator of its function)."""
    return _grad_off(model, loop)


def evaluating(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """Whether ``loop`` evaluates: gradients off, or eval mode and no backward pass."""
    return _evaluating(model, loop)


def _evaluating(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """Gradients off, or the function put a module in eval mode before the loop and the
    loop runs no backward pass (held-out 20, mixup-cifar10's ``test()``: ``net.eval()``, then
    a loop with the legacy ``Variable(x, volatile=True)`` and no ``no_grad``)."""
    return _grad_off(model, loop) or _eval_mode(model, loop)


def _eval_mode(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    fn = model.enclosing_function(loop)
    if fn is None:
        return False
    evals = any(
        isinstance(n, ast.Call)
        and method_name(n) == "eval"
        and isinstance(n.func, ast.Attribute)
        and not n.args
        and n.lineno < loop.lineno
        for n in model.walk_scope(fn)
    )
    return evals and not any(
        isinstance(n, ast.Call) and method_name(n) in TRAINING_CALLS
        for n in _body_nodes(model, loop)
    )


def _grad_off(model: ScriptModel, loop: ast.AST) -> bool:
    for a in model.ancestors(loop):
        if isinstance(a, ast.With | ast.AsyncWith):
            if any(_no_grad_call(model, item.context_expr) for item in a.items):
                return True
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef):
            return any(_no_grad_call(model, d) for d in a.decorator_list)
        if isinstance(a, SCOPE_TYPES):
            return False
    return False


def _no_grad_call(model: ScriptModel, expr: ast.expr) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = model.qualname(target)
    if name not in NO_GRAD:
        return False
    if name == "torch.set_grad_enabled":
        arg = expr.args[0] if isinstance(expr, ast.Call) and expr.args else None
        return isinstance(arg, ast.Constant) and arg.value is False
    return True


def _body_nodes(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> Iterator[ast.AST]:
    for stmt in loop.body:
        yield from model.walk(stmt)


def _moves_batch(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    return any(
        isinstance(n, ast.Call) and method_name(n) in MOVES for n in _body_nodes(model, loop)
    )


def tensor_tests(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> list[ast.expr]:
    """``if valid_mask.sum() < 10: continue`` in the body: a per-batch read of what the test
    needs only (Depth-Anything-V2's validation, held-out 69); the batch's other pending
    tensors (the metrics summed on the device) stay in the growing graph, so the loop still
    needs its sync, but "nothing in it reads a result per batch" would be untrue."""
    values = None
    found = []
    for n in _body_nodes(model, loop):
        if isinstance(n, ast.If | ast.While | ast.IfExp | ast.Assert):
            values = values or host_values(model)
            if values.is_device(n.test):
                found.append(n.test)
    return found


def reads_host(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """A per-batch host read in the body (syntactic, and generous: any such call keeps the
    loop quiet, the safe direction), or a device tensor formatted into a string."""
    values = None
    for n in _body_nodes(model, loop):
        if isinstance(n, ast.Call | ast.BinOp | ast.JoinedStr):
            shown = (
                [v.value for v in n.values if isinstance(v, ast.FormattedValue)]
                if isinstance(n, ast.JoinedStr)
                else formatted(n)
            )
            if shown != [n] and shown:
                # ``bar.suffix = "{:.2f}".format(top1.avg)`` of a device tensor: formatting
                # reads it (held-out 18, bearpaw's test loop).
                values = values or host_values(model)
                if any(values.is_device(v) for v in shown if not isinstance(v, ast.Starred)):
                    return True
        if not isinstance(n, ast.Call):
            continue
        if method_name(n) in HOST_METHODS and isinstance(n.func, ast.Attribute):
            return True
        func = n.func
        if isinstance(func, ast.Name) and func.id in HOST_BUILTINS and n.args:
            if not isinstance(n.args[0], ast.Constant):
                return True
        if _called_body_reads_host(model, n):
            return True
    return False


def _called_body_reads_host(model: ScriptModel, call: ast.Call) -> bool:
    """``metrics = ranker(scores, labels)`` whose module's ``forward`` (here or in a sibling
    file) calls ``.item()`` per k, or a function of this script that does: the graph runs
    in the call each batch (held-out 80, RecFormer's evaluation). Syntactic and generous,
    like the body's own check."""
    bodies: list[ast.AST] = []
    callee = model.steps.callee(call)
    if callee is not None:
        bodies.append(callee)
    elif isinstance(call.func, ast.Name):
        try:
            target = class_call(model, call)
        except ValueError:  # ``from . import x`` in a package module (see helper_reads)
            target = None
        if target is not None and target.method.name in {"forward", "__call__"}:
            bodies += [node for _path, node in regions(target)]
        else:
            bodies += _own_module_methods(model, call.func.id)
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in HOST_METHODS
        and not n.args
        for body in bodies
        for n in ast.walk(body)
    )


def _reached_from_training(model: ScriptModel) -> list[ast.AST]:
    """The training loops and every function of this script they run, directly or through
    other functions (the regions ``loop_syncs`` searches for a training loop's sync)."""
    return model.memo(_reached_from_training, lambda: _reached(model))


def _reached(model: ScriptModel) -> list[ast.AST]:
    seen: dict[int, ast.AST] = {}
    regions: list[ast.AST] = [r for t in model.training_loops for r in t.regions()]
    while regions:
        region = regions.pop()
        if id(region) in seen:
            continue
        seen[id(region)] = region
        for node in model.walk(region):
            if isinstance(node, ast.Call) and (callee := model.steps.callee(node)) is not None:
                regions.append(callee)
    return list(seen.values())


def _inside(model: ScriptModel, loop: ast.AST, regions: list[ast.AST]) -> bool:
    ids = {id(r) for r in regions}
    return any(id(a) in ids for a in model.ancestors(loop))


def _own_module_methods(model: ScriptModel, name: str) -> list[ast.AST]:
    """The methods of the script's own class that calling ``name`` runs, when every
    assignment of ``name`` constructs that one class: ``forward`` / ``__call__`` and the
    methods they call on ``self``."""
    values = bound_values(model, name)
    owners = {v.func.id for v in values if isinstance(v, ast.Call) and isinstance(v.func, ast.Name)}
    cls = classes(model).get(next(iter(owners))) if len(owners) == 1 else None
    if cls is None or len(values) != sum(isinstance(v, ast.Call) for v in values):
        return []
    methods = class_methods(cls)
    todo = [m for m in ("__call__", "forward") if m in methods][:1]
    seen: list[ast.AST] = []
    while todo:
        method = methods[todo.pop()]
        if method in seen:
            continue
        seen.append(method)
        for n in ast.walk(method):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self"
                and n.func.attr in methods
            ):
                todo.append(n.func.attr)
    return seen
