"""XLA117: the training loop's model and batches are never placed on any device.

A script with no CUDA code at all (no ``.to(device)``, no ``.cuda()``, no ``device=``) trains
on the CPU. Converting it adds ``import torch_xla``, a sync and step closures, but nothing
moves to the XLA device, so the "converted" script still trains on the CPU. The tool must say
so rather than report the conversion as nearly done.

No fix is offered: the device must exist before the model is built, the model must be moved
before its optimizer takes its parameters (on XLA ``.to()`` makes new Parameter objects,
XLA109), every batch must be moved, and every tensor the step creates (``torch.zeros`` in
``forward``, targets computed from module-level tensors) must be created on the device or
the first step raises "Expected XLA tensor" (matmul, cat, LSTM cells; torch_xla 2.9). Those places are spread over the script and
its helpers; a local edit cannot find them all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.device_intent import built_where_placed, hand_written_xla, places_on_a_device
from ..semantic.line_refs import line_ref
from ..semantic.model import ScriptModel, method_name
from ..semantic.training_loops import TrainingLoop
from ..semantic.wrapped_steps import workspace_step
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity
from .parts.eval_loops import evaluating
from .parts.self_optimizers import init_builds
from .parts.unmoved_batch_fields import UnmovedField, proven_module, unmoved_batch_fields

CODE = "XLA117"
PARAMETER_METHODS = frozenset({"parameters", "named_parameters", "zero_grad"})


def _trained_names(model: ScriptModel, loops: list[TrainingLoop]) -> list[str]:
    """Names whose parameters are trained: given to an optimizer, or read or zeroed in a
    training loop (a hand-written update ``for p in net.parameters(): p.data.add_(...)``)."""
    names: list[str] = []
    for call in model.calls:
        name = model.call_name(call) or ""
        if not name.startswith("torch.optim."):
            continue
        for arg in [*call.args, *(kw.value for kw in call.keywords)]:
            for n in ast.walk(arg):
                if isinstance(n, ast.Call) and method_name(n) in PARAMETER_METHODS:
                    owner = n.func.value  # type: ignore[union-attr]
                    if isinstance(owner, ast.Name) and owner.id not in names:
                        names.append(owner.id)
    for loop in loops:
        for region in loop.regions():
            for n in ast.walk(region):
                if isinstance(n, ast.Call) and method_name(n) in PARAMETER_METHODS:
                    owner = n.func.value  # type: ignore[union-attr]
                    if isinstance(owner, ast.Name) and owner.id not in names:
                        names.append(owner.id)
    return names


def _steps_in_workspace_class(model: ScriptModel, loops: list[TrainingLoop]) -> bool:
    """``policy.train(batch)`` where ``policy`` is an instance of a class of another module
    (TD3's ``TD3.TD3(...)``): that module builds and places the networks."""
    return any(
        isinstance(n, ast.Call) and workspace_step(model, n) is not None
        for loop in loops
        for n in ast.walk(loop.node)
    )


def _given_by_another_module(model: ScriptModel, name: str) -> bool:
    """``name`` is a parameter of a function (or of a method's class) that nothing in this
    script calls: the model arrives from a caller in another module, which places it."""
    for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
        if name not in params:
            continue
        owner = model.parent(fn)
        entry = owner.name if isinstance(owner, ast.ClassDef) else fn.name
        if any(isinstance(n.ctx, ast.Load) for n in model.name_nodes(entry)):
            return False  # built or called here: the script's own placement decides
        if not isinstance(owner, ast.ClassDef | ast.Module):
            return False  # a nested function: called by its enclosing one
        return True
    return False


def _trained_attributes(model: ScriptModel, loops: list[TrainingLoop]) -> list[ast.Attribute]:
    """``self.net`` in ``self.net.parameters()`` given to an optimizer or read in a loop."""
    found: list[ast.Attribute] = []
    roots: list[ast.AST] = [
        *(
            arg
            for call in model.calls
            if (model.call_name(call) or "").startswith("torch.optim.")
            for arg in [*call.args, *(kw.value for kw in call.keywords)]
        ),
        *(region for loop in loops for region in loop.regions()),
    ]
    for root in roots:
        for n in ast.walk(root):
            if (
                isinstance(n, ast.Call)
                and method_name(n) in PARAMETER_METHODS
                and isinstance(n.func.value, ast.Attribute)  # type: ignore[union-attr]
                and isinstance(n.func.value.value, ast.Name)  # type: ignore[union-attr]
            ):
                found.append(n.func.value)  # type: ignore[union-attr]
    return found


def _parameter_of_enclosing(model: ScriptModel, node: ast.AST, name: str) -> bool:
    fn = model.enclosing_function(node)
    if fn is None:
        return False
    args = fn.args
    return name in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def _from_a_parameter(model: ScriptModel, value: ast.expr) -> bool:
    """``config.network_fn()``, ``net_fn()``, ``net``: a value (or a factory) the caller
    handed in, so what builds and places the model is out of this script's reach."""
    root: ast.expr = value.func if isinstance(value, ast.Call) else value
    while isinstance(root, ast.Attribute | ast.Call):
        root = root.value if isinstance(root, ast.Attribute) else root.func
    return (
        isinstance(root, ast.Name)
        and root.id != "self"
        and _parameter_of_enclosing(model, value, root.id)
    )


def _attribute_given_by_caller(model: ScriptModel, attribute: ast.Attribute) -> bool:
    """Every ``self.net = ...`` in the script takes a value from a parameter (DeepRL's
    ``self.network = config.network_fn()``, held-out 32)."""
    owner = attribute.value.id  # type: ignore[attr-defined]
    values = [
        node.value
        for node in model.nodes_of(ast.Assign)
        for target in node.targets  # type: ignore[attr-defined]
        if isinstance(target, ast.Attribute)
        and target.attr == attribute.attr
        and isinstance(target.value, ast.Name)
        and target.value.id == owner
    ]
    return bool(values) and all(_from_a_parameter(model, v) for v in values)


def _helper_places(model: ScriptModel, loops: list[TrainingLoop]) -> bool:
    """A function of a sibling module called where the loop runs places tensors itself
    (``tensor(x)`` doing ``.to(Config.DEVICE)``): the batches reach a device there."""
    scopes = {model.enclosing_function(loop.node) or loop.node for loop in loops}
    return any(
        isinstance(n, ast.Call) and built_where_placed(model, n)
        for scope in scopes
        for n in ast.walk(scope)
    )


def _construction(model: ScriptModel, names: list[str]) -> ast.Call | None:
    """The call that builds the trained model (``net = Net()``), when the script has one."""
    for name in names:
        for value in model.assigned_from(name):
            if isinstance(value, ast.Call) and not (model.call_name(value) or "").startswith(
                "torch.optim."
            ):
                return value
    return None


def _loop_header(loop: TrainingLoop) -> ast.AST:
    """What the loop iterates over (``range(epochs)``), not its whole body."""
    node = loop.node
    return node.iter if isinstance(node, ast.For | ast.AsyncFor) else node.test


def _device_code(ctx: RuleContext) -> str:
    return "xm.xla_device()" if ctx.target == "legacy" else "torch_xla.device()"


def _unmoved_fields(model: ScriptModel, loops: list[ast.AST]) -> Iterator[Finding]:
    for found in unmoved_batch_fields(model, loops):
        name = found.arg.id
        moved = f"{name}.to({found.device})" if found.device else f"{name}.cuda()"
        module = proven_module(model, found.call)
        callee = model.segment(found.call.func)
        yield Finding(
            CODE,
            f"`{name}` goes to the model without being moved to the device, while "
            f"`{found.moved}` is: on CUDA nn.DataParallel or DDP(device_ids) moved it inside "
            "forward; on XLA nothing does and the model on the XLA device gets a CPU tensor "
            '("Expected XLA tensor")',
            model.span(found.arg),
            Severity.WARNING,
            fix=Fix(
                f"Move it where `{found.moved}` goes: {moved}",
                (Replace(model.span(found.arg), moved),),
                safe=not (other := _other_use(model, found)) and module,
                review_reason=(
                    f"`{name}` is also used on line {line_ref(other.lineno)} "
                    f"(`{model.segment(model.enclosing_statement(other) or other)[:50].strip()}`), "
                    "which still gets the CPU tensor: if that reaches the model too, move "
                    f"`{name}` once where the batch is unpacked instead"
                    if other
                    else (
                        f"nothing here shows `{callee}` is a module (no `.train()`, "
                        "`.parameters()` or `.to(...)` of it): if it prepares the batch "
                        f"instead (a tokenizer, a transform), `{name}` may be a list of strings "
                        "that `.to()` breaks"
                        if not module
                        else ""
                    )
                ),
            ),
        )


# Reads of a tensor that give metadata, not data: the CPU tensor serves them as well.
METADATA = frozenset({"shape", "size", "dim", "ndimension", "dtype", "ndim", "numel"})


def _other_use(model: ScriptModel, found: UnmovedField) -> ast.Name | None:
    """Another read of the unmoved field in the loop around the model call (HRNet's flip test,
    held-out 53: ``model(input)`` then ``model(input.flip(3))``): the fix moves only the one
    argument, so that read still gets the CPU tensor."""
    loop = next(
        (a for a in model.ancestors(found.call) if isinstance(a, ast.For | ast.AsyncFor)), None
    )
    if loop is None:
        return None
    name = found.arg.id
    reads = sorted(
        (
            n
            for n in ast.walk(loop)
            if isinstance(n, ast.Name)
            and n.id == name
            and isinstance(n.ctx, ast.Load)
            and n is not found.arg
        ),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for node in reads:
        parent = model.parent(node)
        if isinstance(parent, ast.Attribute) and parent.attr in METADATA:
            continue
        if isinstance(parent, ast.Call) and getattr(parent.func, "id", None) == "len":
            continue
        return node
    return None


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    loops = model.training_loops
    if not hand_written_xla(model):
        no_grad = [
            n
            for n in model.nodes_of(ast.For, ast.AsyncFor)
            if isinstance(n.target, ast.Tuple) and evaluating(model, n)  # type: ignore[arg-type, attr-defined]
        ]
        yield from _unmoved_fields(model, [*(loop.node for loop in loops), *no_grad])
    yield from _placed_nothing(model, ctx)


def places_nothing(model: ScriptModel, ctx: RuleContext) -> bool:
    """Whether the script trains without placing its model or batches on any device."""
    return next(_placed_nothing(model, ctx), None) is not None


def _placed_nothing(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    loops = model.training_loops
    if not loops or hand_written_xla(model) or places_on_a_device(model):
        return
    if any(loop.external_steps for loop in loops) or _steps_in_workspace_class(model, loops):
        return  # the step (and maybe the placement) lives in another module
    names = _trained_names(model, loops)
    built = _construction(model, names)
    if built is None and names and all(_given_by_another_module(model, n) for n in names):
        return  # the caller builds the model and places it (held-out 21, a2c-ppo's PPO)
    if built is not None and built_where_placed(model, built):
        return  # a sibling module builds the model and places things itself
    if built is not None and _from_a_parameter(model, built):
        return  # built by a factory the caller hands in
    attributes = [] if names else _trained_attributes(model, loops)
    if attributes and all(_attribute_given_by_caller(model, a) for a in attributes):
        return  # the caller's factory builds the model (and may place it)
    if _helper_places(model, loops):
        return
    model_name = names[0] if names and built is not None else "model"
    device = _device_code(ctx)
    own = init_builds(model)
    own_note = (
        f" `{next(iter(own))}.__init__` builds its optimizer from `self.parameters()` (line "
        f"{next(iter(own.values())).lineno}): move the module there, before that line "
        "(`self.to(device)`), or build the optimizer again after the move: on XLA the move "
        "makes new Parameter objects and an optimizer built before keeps the old ones (XLA109)."
        if own
        else ""
    )
    yield Finding(
        CODE,
        "nothing in this script places the model or its batches on a device: after "
        "conversion it still trains on the CPU, not on the XLA device",
        model.span(built if built is not None else _loop_header(loops[0])),
        Severity.WARNING,
        manual=(
            f"Create the device once (`device = {device}`), move the model right after it is "
            f"built and before its optimizer is made (`{model_name}.to(device)`), move every "
            "batch (`x = x.to(device)`), and create the tensors the step makes on the device "
            "(`torch.zeros(..., device=device)`)." + own_note
        ),
    )


HOVER = """\
**XLA117 · the model never reaches a device**

Nothing places the model or its batches on a device, so the converted script still trains
on the CPU. Add:

| target | device |
|---|---|
| modern (torch_xla ≥ 2.5) | `device = torch_xla.device()` |
| legacy (1.13) | `device = xm.xla_device()` |

then `model.to(device)` before the optimizer is built, and `.to(device)` on every batch.
"""

RULE = Rule(
    code=CODE,
    name="not-on-device",
    category=Category.CONVERSION,
    summary="training loop whose model and batches are never placed on a device → "
    "device = torch_xla.device(), model.to(device) before the optimizer, batches .to(device)",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={},
)
