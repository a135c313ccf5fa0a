"""XLA401: the training loop reads a device tensor on the host (an extra graph run per step)."""

from __future__ import annotations

import ast
import string
from collections.abc import Callable, Iterator

from ..semantic.device_intent import hand_written_xla
from ..semantic.host_calls import is_builtin_call
from ..semantic.host_values import HostValues, host_values
from ..semantic.line_refs import line_ref
from ..semantic.loop_syncs import written_for_xla
from ..semantic.model import (
    Emitter,
    ScriptModel,
    TrainingLoop,
    method_name,
    receiver,
)
from ..semantic.tensors import HOST_METHODS, loop_nodes, scope_of
from . import xla117_not_on_device
from .base import (
    Category,
    EditOp,
    Finding,
    Fix,
    LazyOps,
    ReplaceStatement,
    Rule,
    RuleContext,
    Severity,
    Target,
)
from .parts.acting_reads import feeds_environment
from .parts.checkpoint_objects import MODULE, object_kind
from .parts.closure_changes import changed_before_sync
from .parts.closure_names import free_names
from .parts.closure_order import clock_read, reported_out_of_order
from .parts.closure_timing import (
    NEVER_RUNS,
    REVIEW_LOST,
    closed_resource,
    sync_offered,
    sync_runs_after,
)
from .parts.closure_uses import used_before_sync
from .parts.cpu_buffer_stores import STORE_MANUAL, STORE_MARK, cpu_buffer_store
from .parts.eval_loops import evaluation_loops
from .parts.forward_buffer_reads import READ_MANUAL, forward_buffer_reads, read_message
from .parts.framework_device import framework_read_manual
from .parts.helper_reads import HELPER_MANUAL, helper_message, helper_reads
from .parts.loader_fields import reads_cpu_loader_field
from .parts.narrowed_modules import narrowed_module
from .parts.numpy_reads import (
    bare_numpy,
    crash_read,
    crashes_outside_loops,
    numpy_conversion,
    tensor_valued,
)
from .parts.periodic_blocks import periodic_block
from .parts.reporting_calls import REPORTING_METHODS, formatted, is_reporting, reported_values
from .parts.shape_reads import shape_read_manual

CODE = "XLA401"
STEP_CLOSURE = "torch_xla.core.xla_model.add_step_closure"
CONVERSIONS = frozenset({"float", "int", "bool"})
CONVERSION = "np.array(tensor)"
MAYBE = "maybe:"  # marks a read that is a device read only if its parameters are tensors
MANUAL = (
    "Keep the value on the device and read it once after the loop (e.g. "
    "`total_loss += loss.detach()`, then `total_loss.item()` after the epoch), or move the "
    "read into `xm.add_step_closure(fn, args=(...))`, which runs after the step's graph."
)

IMAGE_WRITERS = frozenset({"torchvision.utils.save_image"})

# The read is an ``if``/``while`` test in the loop: the host needs the value before it can go
# on, so neither a step closure nor a read after the loop keeps the program's meaning.
DECIDING_MANUAL = (
    "This value decides what the loop does next (`{test}`), so it cannot move into a step "
    "closure or wait until after the loop: each step pays the sync. To avoid it the decision "
    "itself must move onto the device (torch.where on tensors), which changes what happens on "
    "the steps it skipped; otherwise keep the read."
)

EVAL_MANUAL = (
    "Accumulate on the device (`total += loss.detach()`, `correct += pred.eq(y).sum()`), "
    "call torch_xla.sync() once per batch, and read the totals once after the loop "
    "(`total.item()`): one execution per batch and one transfer per total. No step closure: "
    "it would run after the code that uses the totals."
)


def _outer_host_read(model: ScriptModel, call: ast.Call) -> bool:
    """Whether ``call`` is the receiver of a later host read (``t.cpu().numpy()``)."""
    cur: ast.AST = call
    while True:
        attr = model.parent(cur)
        outer = model.parent(attr) if isinstance(attr, ast.Attribute) else None
        if not (isinstance(outer, ast.Call) and outer.func is attr):
            return False
        if method_name(outer) in HOST_METHODS:
            return True
        cur = outer


def _bare_numpy_in(model: ScriptModel, node: ast.AST) -> ast.Call | None:
    """The ``t.numpy()`` with no copy to the host that the read ``node`` is or reads through
    (``t.numpy().tolist()`` is reported at ``.tolist()``)."""
    while isinstance(node, ast.Call) and method_name(node) in HOST_METHODS:
        if bare_numpy(model, node):
            return node
        node = receiver(node)  # type: ignore[assignment]
    return None


def _pending(values: HostValues, expr: ast.AST) -> bool:
    """A device tensor whose value is not computed yet: not a host value, and not read as it
    is right after the script's own sync (which has just computed it)."""
    return values.is_device(expr) and not values.materialized(expr)


def _reads(model: ScriptModel, values: HostValues, node: ast.AST) -> str | None:
    """What kind of host read ``node`` is, or None."""
    if isinstance(node, ast.Assign):
        return cpu_buffer_store(model, values, node)
    if isinstance(node, ast.Call):
        tensor = numpy_conversion(model, node)
        if tensor is not None:  # ``np.array(t)``: numpy reads ``t`` through ``.numpy()``
            device = values.is_device(tensor) and tensor_valued(values, tensor)
            return CONVERSION if device else None
        recv = receiver(node)
        if method_name(node) in HOST_METHODS and recv is not None:
            if _outer_host_read(model, node):
                return None
            if method_name(node) == "cpu" and (
                object_kind(model, recv) == MODULE or narrowed_module(model, recv)
            ):
                # ``copy.deepcopy(ema).eval().cpu()``: a model snapshot the script copies to
                # the host on purpose, not a value read mid-step (a closure saves nothing);
                # also through a name an ``isinstance(v, nn.Module)`` test narrowed.
                return None
            # ``t.cpu().numpy()`` reads ``t``: judge the value the chain starts from, also
            # through methods between the reads (``loss.cpu().detach().numpy()``, held-out 65's
            # mdistiller trainers: the ``.cpu()`` leaves the report to the ``.numpy()``).
            start, cur = recv, recv
            while isinstance(cur, ast.Call) and isinstance(cur.func, ast.Attribute):
                if method_name(cur) in HOST_METHODS or (
                    # ``loss.detach().cpu().item()`` right after the sync (held-out 114's
                    # LLaVA control: no graph of its own, measured there): detach only
                    # aliases the computed value.
                    method_name(cur) == "detach" and not cur.args and not cur.keywords
                ):
                    start = receiver(cur)
                cur = receiver(cur)
            recv = start
            if recv is not None and values.is_host(recv):
                return None
            if recv is not None and values.materialized(recv):
                # Computed already (no sync to save), but a bare ``.numpy()`` still raises.
                return ".numpy()" if _bare_numpy_in(model, node) is not None else None
            return f".{method_name(node)}()"
        if (
            is_builtin_call(model, node, CONVERSIONS)
            and len(node.args) == 1
            and _pending(values, node.args[0])
        ):
            return f"{node.func.id}(tensor)"  # type: ignore[attr-defined]
        if model.call_name(node) in IMAGE_WRITERS and node.args and _pending(values, node.args[0]):
            # ``save_image(fake, "running.jpg")`` every step (animeface's CycleGAN, held-out
            # 105): torchvision copies the grid to the host to write it.
            return "writing an image of a tensor"
        if is_reporting(model, node):
            args = [
                a
                for v in (*node.args, *(k.value for k in node.keywords))
                for a in reported_values(v)
            ]
            if any(_pending(values, v) for v in args if not isinstance(v, ast.Starred)):
                return "passing a tensor to a logging call"
    if _formats_pending(model, values, node):
        return None if _in_assert_message(model, node) else "formatting a tensor"
    if isinstance(node, ast.JoinedStr):
        if _in_assert_message(model, node):
            return None
        pending = [
            v.value
            for v in node.values
            if isinstance(v, ast.FormattedValue) and _pending(values, v.value)
        ]
        if not pending:
            return None
        doubts = [values.host_unless(v) if isinstance(v, ast.Name) else [] for v in pending]
        if all(doubts):
            # A float made from parameters of unknown type: a tensor only if they are.
            name = pending[0].id  # type: ignore[attr-defined]
            params = ", ".join(f"`{p}`" for p in doubts[0])
            return f"{MAYBE}formatting `{name}`, a tensor only if {params} is one,"
        return "formatting a tensor"
    return None


def _in_assert_message(model: ScriptModel, node: ast.AST) -> bool:
    """``assert ok, f"... {t}"``: the message is built only when the assertion fails
    (held-out 181's GPT-SoVITS asserts with the tensor in the message)."""
    child = node
    for a in model.ancestors(node):
        if isinstance(a, ast.Assert):
            return child is a.msg
        if isinstance(a, ast.stmt):
            return False
        child = a
    return False


def _formats_pending(model: ScriptModel, values: HostValues, node: ast.AST) -> bool:
    """``bar.suffix = "{acc: .4f}".format(acc=top1.avg)`` of a device tensor: formatting
    calls ``Tensor.__format__``, which reads the value (held-out 18, bearpaw's progress bar).
    Inside a reporting call the call is the read (and gets the closure fix)."""
    args = formatted(node)  # type: ignore[arg-type]
    if not isinstance(node, ast.Call | ast.BinOp) or args == [node]:
        return False
    # ``print("iter " + repr(i) + " || Loss: %.4f" % loss)``: inside a reporting call's
    # argument, however deep, the call is the read (ssd.pytorch, held-out 24).
    for a in model.ancestors(node):
        if isinstance(a, ast.stmt):
            break
        if isinstance(a, ast.Call) and is_reporting(model, a):
            return False
    if any(_pending(values, v) for v in args if not isinstance(v, ast.Starred)):
        return True
    return any(values.fed_device(obj) for obj in _attribute_fields(node))


def _attribute_fields(node: ast.AST) -> list[ast.expr]:
    """The arguments of ``"{loss.val:.4f}".format(loss=losses)`` whose attributes the format
    string reads (held-out 142's OpenPose trainer: ``losses`` an AverageMeter fed the device
    loss, its ``.val`` and ``.avg`` tensors formatted every print)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return []
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(node.func.value.value) if f]
    except ValueError:
        return []
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    out: list[ast.expr] = []
    auto = 0
    for field in fields:
        key, dot, _ = field.partition(".")
        key = key.partition("[")[0]
        if key == "":
            key, auto = str(auto), auto + 1
        if not dot:
            continue
        arg = (
            node.args[int(key)]
            if key.isdigit() and int(key) < len(node.args)
            else keywords.get(key)
        )
        if isinstance(arg, ast.Name | ast.Attribute):
            out.append(arg)
    return out


def _closure_functions(model: ScriptModel) -> set[str]:
    """Functions the script already hands to ``add_step_closure``."""
    return {
        c.args[0].id
        for c in model.calls_to(STEP_CLOSURE)
        if c.args and isinstance(c.args[0], ast.Name)
    }


def _closure_ops(model: ScriptModel, stmt: ast.Expr) -> tuple[EditOp, ...]:
    e = Emitter(model)
    names = free_names(model, stmt)
    body = model.block_segment(stmt.value, stmt)
    if names:
        params = ", ".join(names)
        args = params + ("," if len(names) == 1 else "")
        code = f"{e.xm}.add_step_closure(lambda {params}: {body}, args=({args}))"
    else:
        code = f"{e.xm}.add_step_closure(lambda: {body})"
    return (ReplaceStatement(model.span(stmt), code), *e.imports)


def _deferred_safely(
    model: ScriptModel, values: HostValues, loop: TrainingLoop, target: Target
) -> Callable[[ast.stmt], bool]:
    """Whether this rule moves a statement of ``loop`` into a step closure with a safe fix
    (decided from the later statements back; a statement still being decided, reached again
    through an inner loop's next pass, counts as not moved)."""
    decided: dict[int, bool] = model.memo((CODE, "deferred", target, id(loop.node)), dict)

    def deferred(stmt: ast.stmt) -> bool:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        key = id(stmt)
        if key not in decided:
            decided[key] = False
            nodes = list(ast.walk(stmt.value))
            reads = any(_reads(model, values, n) is not None for n in nodes)
            crashes = any(_bare_numpy_in(model, n) is not None for n in nodes)
            decided[key] = (
                reads and not crashes and _closure_fix(model, values, loop, stmt, target).safe
            )
        return decided[key]

    return deferred


def _closure_fix(
    model: ScriptModel, values: HostValues, loop: TrainingLoop, stmt: ast.Expr, target: Target
) -> Fix:
    reporting = isinstance(stmt.value, ast.Call) and is_reporting(model, stmt.value)
    title = "Read it after the step: wrap in xm.add_step_closure"
    reasons = []
    if written_for_xla(model) or hand_written_xla(model):
        # Held-out 85 and 88's TPU controls: Convert rewrote their periodic logging.
        reasons.append(WRITTEN_FOR_XLA)
    if not reporting:
        reasons.append(
            used_before_sync(model, loop, stmt)
            or "the call runs later, after the step: code that uses its effect in this step changes"
        )
    reasons.append(clock_read(model, stmt) or "")
    closed = closed_resource(model, stmt)
    if closed is not None:
        reasons.append(REVIEW_LOST.format(why=closed, what="report"))
    else:
        reasons.append(sync_runs_after(model, loop, stmt, target) or "")
    if not any(reasons):
        # Only for a fix that would be safe: what it reads must not change before the sync,
        # and no other message of the iteration may come out before it.
        reasons.append(changed_before_sync(model, loop, stmt, free_names(model, stmt)) or "")
        if not any(reasons):
            deferred = _deferred_safely(model, values, loop, target)
            reasons.append(reported_out_of_order(model, loop, stmt, deferred) or "")
    elif not reporting:
        captured = free_names(model, stmt)
        reasons.append(changed_before_sync(model, loop, stmt, captured, reporting) or "")
    reason = "; ".join(r for r in reasons if r)
    return Fix(
        title,
        # Free names and the closure's text only matter when the fix is used.
        LazyOps(lambda: _closure_ops(model, stmt)),
        safe=not reason,
        review_reason=reason,
    )


UNSYNCED_MANUAL = (
    "Nothing in this loop syncs, so a step closure here would never run: end each step with "
    "torch_xla.sync() first (then `xm.add_step_closure(fn, args=(...))` reads the value after "
    "the step), or keep the value on the device and read it once after the loop."
)
SYNC_COST = "XLA must compile and run the pending graph right here, an extra sync every step"
WRITTEN_FOR_XLA = (
    "the script was written for XLA, and its author chose to read the value here: in a step "
    "closure the message comes out after the step instead"
)
CPU_SCRIPT = (
    "nothing in this script places its tensors on a device (XLA117), so this is a CPU tensor "
    "as written and the read costs nothing; once the model and its batches are on the XLA "
    "device, "
)


def _message(what: str, on_cpu: bool, periodic: ast.If | None = None) -> str:
    if periodic is not None:
        every = f"every step that runs the periodic block on line {line_ref(periodic.lineno)}"
        return _message(what, on_cpu).replace("every step", every)
    if what.startswith(MAYBE):
        head = f"{what.removeprefix(MAYBE)} may read a tensor on the host inside the training loop"
        if on_cpu:
            return f"{head}: {CPU_SCRIPT}if it is one, {SYNC_COST}"
        return f"{head.replace('a tensor', 'a device tensor')}: if so, {SYNC_COST}"
    if on_cpu:
        return (
            f"{what} reads a tensor on the host inside the training loop: {CPU_SCRIPT}{SYNC_COST}"
        )
    return f"{what} reads a device tensor on the host inside the training loop: {SYNC_COST}"


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    values = host_values(model)
    closures = _closure_functions(model)
    # A script that places nothing on a device (XLA117's finding) keeps its tensors on the
    # CPU as written and after conversion: its reads sync nothing until the tensors are moved.
    on_cpu = model.memo(
        (CODE, xla117_not_on_device.CODE, ctx.target),
        lambda: xla117_not_on_device.places_nothing(model, ctx),
    )
    if not on_cpu:  # a script placing nothing on a device keeps these on the CPU
        for call, message, fix in crashes_outside_loops(model, values, REPORTING_METHODS):
            yield Finding(CODE, message, model.span(call), Severity.WARNING, fix=fix)
    agnostic = framework_read_manual(model)
    # A validation loop inside the training loop (img2img-turbo's, every eval_freq steps): its
    # reads are said once, as the evaluation loop's (no step closure), not also as the step's.
    evaluation = [] if on_cpu else list(_evaluation_reads(model, values, closures))
    said = {id(node) for node, _ in evaluation}
    for loop, node in loop_nodes(model):
        if id(node) in said:
            continue
        what = _reads(model, values, node)
        if what is None:
            continue
        if _reads_unmoved_batch(model, loop, node, ctx.target):
            continue  # the loader's CPU batch, read before its move: no device graph runs
        # Reads in a function the script already runs as a step closure are its business
        # (asked only of reads: most loop nodes are none).
        scope = scope_of(model, node)
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and scope.name in closures:
            continue
        if feeds_environment(model, _region(model, loop, node), node):
            continue  # an agent's action for env.step: the algorithm needs it now
        stmt = model.enclosing_statement(node)
        numpy = _bare_numpy_in(model, node) or (node if what == CONVERSION else None)
        crash = crash_read(model, numpy, on_cpu, REPORTING_METHODS, True) if numpy else None
        if crash is not None:
            # A step closure would keep the crash: the copy to the host comes first.
            message, fix = crash
            yield Finding(CODE, message, model.span(node), Severity.WARNING, fix=fix)
            continue
        periodic = periodic_block(model, loop, node)
        if periodic is not None and (written_for_xla(model) or hand_written_xla(model)):
            # A report every N steps in a script a person wrote for XLA (Shopee's TPU trainer,
            # held-out 161's control): one extra run per interval, the author's choice.
            continue
        message = _message(what, on_cpu, periodic)
        if agnostic:
            # Lightning runs it on any device: a note, no torch_xla fix; a periodic read costs
            # one run per logging interval, not per step (as in evaluation loops): quiet.
            if periodic is None:
                yield Finding(
                    CODE, message, model.span(node), Severity.INFORMATION, manual=agnostic
                )
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            fix = _closure_fix(model, values, loop, stmt, ctx.target)
            if NEVER_RUNS in fix.review_reason and not sync_offered(model, loop, ctx.target):
                # A closure nothing would ever run (no sync in the loop, none a safe fix adds):
                # no fix to offer, even for review (held-out 109's TPU PPO control).
                yield Finding(
                    CODE, message, model.span(node), Severity.WARNING, manual=UNSYNCED_MANUAL
                )
            else:
                yield Finding(CODE, message, model.span(node), Severity.WARNING, fix=fix)
        else:
            manual = (
                STORE_MANUAL
                if STORE_MARK in what
                else shape_read_manual(model, loop.node, stmt, node)
                or _deciding_manual(model, stmt, node)
            )
            yield Finding(CODE, message, model.span(node), Severity.WARNING, manual=manual)
    yield from (finding for _, finding in evaluation)
    for read in forward_buffer_reads(model):  # every forward, wherever the loop is
        yield Finding(
            CODE,
            read_message(model, read),
            model.span(read.node),
            Severity.WARNING,
            manual=READ_MANUAL,
        )
    every_step = lambda loop, node: periodic_block(model, loop, node) is None  # noqa: E731
    for read in helper_reads(model, _helper_read, every_step, lambda fn: fn.name in closures):
        what = read.what
        if read.returned and feeds_environment(
            model, _region(model, read.loop, read.call), read.call
        ):
            continue  # ``action = agent.act(state)`` then ``env.step(action)``
        if read.mixed and not what.startswith(MAYBE):
            # Evidence both ways: said softly rather than kept quiet (see the rule page).
            what = f"{MAYBE}{what} (of a CPU tensor on some paths, a device tensor on others)"
        message = helper_message(read, _message(what, on_cpu))
        span = model.span(read.call if read.where else read.node)  # a sibling's: at the call
        manual = STORE_MANUAL if STORE_MARK in what else HELPER_MANUAL
        yield Finding(CODE, message, span, Severity.WARNING, manual=manual)


def _deciding_manual(model: ScriptModel, stmt: ast.stmt | None, node: ast.AST) -> str:
    """``if is_valid_number(loss.data.item()):`` around the backward and the step (pysot,
    held-out 100): the advice for a deferred read would change which steps run."""
    if not (isinstance(stmt, ast.If | ast.While) and any(n is node for n in ast.walk(stmt.test))):
        return MANUAL
    # A test around a print alone moves into a closure whole; one that decides what trains
    # or where the loop goes does not.
    governed = [n for s in (*stmt.body, *stmt.orelse) for n in ast.walk(s)]
    if any(isinstance(n, DECIDES) for n in governed) or any(
        isinstance(n, ast.Call) and method_name(n) in TRAINING_METHODS for n in governed
    ):
        return DECIDING_MANUAL.format(test=model.segment(stmt.test)[:60])
    return MANUAL


DECIDES = (ast.Break, ast.Continue, ast.Return, ast.Raise)
TRAINING_METHODS = frozenset({"backward", "step", "zero_grad", "optimizer_step"})


def _reads_unmoved_batch(
    model: ScriptModel, loop: TrainingLoop, node: ast.AST, target: Target
) -> bool:
    """``assert images.max().item() <= 1`` on a plain DataLoader's batch before the loop moves
    it (held-out 51, minimal-diffusion): a CPU tensor, unless Convert wraps the loader in an
    MpDeviceLoader (XLA106's safe fix), whose batches arrive on the device."""
    if not isinstance(loop.node, ast.For | ast.AsyncFor):
        return False
    if not reads_cpu_loader_field(model, loop.node, node, computed=True):
        return False
    from .xla106_device_loader import will_wrap  # noqa: PLC0415 (XLA106 reads this rule's parts)

    return not will_wrap(model, loop.node, target)


def _region(model: ScriptModel, loop: TrainingLoop, node: ast.AST) -> ast.AST:
    """The loop, or the step function of it that runs ``node``."""
    if model.span(loop.node).contains(model.span(node)):
        return loop.node
    return scope_of(model, node)


def _evaluation_reads(
    model: ScriptModel, values: HostValues, closures: set[str]
) -> Iterator[tuple[ast.AST, Finding]]:
    """Per-batch reads in evaluation loops (``parts/eval_loops``): advice, no fix (a step
    closure would defer ``correct += ....item()`` past the code that uses the total)."""
    for loop in evaluation_loops(model, handed_in=True):
        scope = scope_of(model, loop)
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and scope.name in closures:
            continue
        for stmt in loop.body:
            for node in (stmt, *model.walk_scope(stmt)):
                what = _reads(model, values, node)
                if what is None or what.startswith(MAYBE):
                    continue
                if what == CONVERSION or _bare_numpy_in(model, node) is not None:
                    continue  # a crash, not a sync: XLA401's numpy findings say so elsewhere
                if reads_cpu_loader_field(model, loop, node):
                    continue  # a batch field the loop never moves: a CPU tensor
                if periodic_block(model, TrainingLoop(loop), node) is not None:
                    continue  # ``if i % 100 == 0: print(loss)``: every 100 batches, not each
                yield (
                    node,
                    Finding(
                        CODE,
                        f"{what} reads a device tensor on the host in every batch of the "
                        f"evaluation loop on line {line_ref(loop.lineno)}: each read compiles and runs the "
                        "pending graph right there, once per batch",
                        model.span(node),
                        Severity.WARNING,
                        manual=EVAL_MANUAL,
                    ),
                )


def _helper_read(model: ScriptModel, values: HostValues, node: ast.AST) -> str | None:
    """A read in a helper the loop calls; not a ``.numpy()`` that raises (reported apart).
    In a helper (which XLA404 does not follow) a test of a tensor is one too: vits'
    ``mel_spectrogram_torch`` tests ``if torch.min(y) < -1.:`` on every call, while the print
    under it runs only when the test holds (held-out 37)."""
    test = _tensor_test(values, model, node)
    if test is not None:
        return test
    what = _reads(model, values, node)
    bare = what == CONVERSION or _bare_numpy_in(model, node) is not None
    return None if bare else what


# Comparisons whose result is a Python bool whatever the operands: no tensor is read.
IDENTITY_OPS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)
TESTING = {ast.If: "an if", ast.While: "a while", ast.Assert: "an assert", ast.IfExp: "a test"}


def _tensor_test(values: HostValues, model: ScriptModel, node: ast.AST) -> str | None:
    test, parent = node, model.parent(node)
    while isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        # ``assert not torch.isnan(loss).any()`` (held-out 93's RAFT-Stereo loss): the
        # negation reads the tensor all the same.
        test, parent = parent, model.parent(parent)
    kind = TESTING.get(type(parent)) if parent is not None else None
    if kind is None or getattr(parent, "test", None) is not test:
        return None
    if isinstance(node, ast.Compare):
        if any(isinstance(op, IDENTITY_OPS) for op in node.ops):
            return None
    elif not isinstance(node, ast.Call):
        return None  # a bare name may be a flag; a tensor there is XLA404's in the loop
    return (
        f"{kind} testing a tensor (`{model.segment(test)[:50]}`)"
        if values.is_device(node)
        else None
    )


def _hover(api: str) -> str:
    return f"""\
**XLA401 · `{api}` in the training loop**

XLA tensors are lazy: reading one on the host (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`,
`float(t)`, `print(t)`, an f-string) compiles and runs the pending graph mid-step.

Fix: report from a step closure, which runs after the step's graph has executed:
`xm.add_step_closure(lambda loss: print(loss.item()), args=(loss,))` (pass the tensors as
`args`, so the closure sees this step's values). For running totals keep the sum on the
device (`total += loss.detach()`) and read it once after the loop.
`xm.add_step_closure` is the same on the legacy (torch_xla 1.13) and modern targets.
`t.numpy()` and `np.array(t)` raise on an XLA tensor (as on a CUDA one), in the loop or out
of it: copy it first, `t.cpu().numpy()`, `np.array(t.cpu())`.
"""


RULE = Rule(
    code=CODE,
    name="host-read",
    category=Category.PERFORMANCE,
    summary="Host reads of tensors in the training loop (.item(), print(loss), float(t)) → xm.add_step_closure",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        ".item": _hover(".item()"),
        ".tolist": _hover(".tolist()"),
        ".cpu": _hover(".cpu()"),
        ".numpy": _hover(".numpy()"),
        STEP_CLOSURE: _hover("xm.add_step_closure"),
    },
)
