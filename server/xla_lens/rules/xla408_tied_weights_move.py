"""XLA408: moving a model with tied weights to the XLA device unties them.

``nn.Module.to`` keeps a Parameter object when the new tensor can share its storage type (a
dtype cast, CPU to CUDA); CPU to XLA cannot, so each module's parameter is copied on its own and
a weight two modules share becomes two tensors. Measured on torch_xla 2.9 (PJRT CPU): a module
with ``self.emb.weight = self.out.weight`` has 1 parameter before ``.to(xla)`` and 2 after;
GPT2LMHeadModel's ``lm_head.weight is transformer.wte.weight`` goes from True to False. Nothing
fails: the embedding and the output layer train apart (PyTorch/XLA's TROUBLESHOOTING.md, "XLA
tensor quirks": tie the weights after the move; the HF Trainer calls ``model.tie_weights()``
after its move for that reason).

The fix re-ties right after the move, with the class's own statement (``self`` read as the moved
name) or, for a Hugging Face model, ``model.tie_weights()``. It is safe: on CUDA or the CPU the
weights are still tied there, so the assignment puts the same Parameter back (a no-op), and on
XLA the two copies hold the same values at that point (both were copied from one tensor), so the
tied model goes on exactly as the original's. A tie made only under a condition is re-made only
where it was made: ``m_tied = m.a is m.b`` before the move, ``if m_tied: m.a = m.b`` after
(re-tied unconditionally it would tie a model the original left untied); where the model is
built and moved in one statement there is nothing to ask before the move, and no fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..semantic.device_intent import being_converted, uses_xla_device
from ..semantic.frameworks import ownership
from ..semantic.line_refs import line_ref
from ..semantic.model import ScriptModel, method_name
from ..semantic.optimizer_events import _is_optimizer_class, moves_to_a_device
from ..semantic.workspace_classes import (
    ClassRef,
    built,
    chain,
    class_reference,
    script_module,
)
from .base import Category, Finding, Fix, InsertAfter, InsertBefore, Rule, RuleContext, Severity

CODE = "XLA408"
PARAMETER_ATTRS = frozenset({"weight", "bias"})
# Hugging Face classes whose models may tie their input and output embeddings.
HF_TIED_SUFFIXES = (
    "LMHeadModel",
    "ForCausalLM",
    "ForMaskedLM",
    "ForConditionalGeneration",
    "ForPreTraining",
    "ForSeq2SeqLM",
    "WithLMHead",
)
CONSTRUCTORS = frozenset({"from_pretrained", "from_config"})
SELF_RETURNING = frozenset({"to", "cuda", "train", "eval", "float", "bfloat16", "half"})


@dataclass(frozen=True)
class Tie:
    target: str  # "transformer.wte.weight" (``self.`` left off)
    value: str  # "lm_head.weight"
    conditional: bool
    where: str  # "model.py:140", for the message


def _self_path(node: ast.expr) -> str | None:
    """``a.b.weight`` of ``self.a.b.weight`` (two attributes at least), else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id != "self" or len(parts) < 2:
        return None
    return ".".join(reversed(parts))


def _ties_in(body: list[ast.stmt], conditional: bool, out: list[tuple[ast.Assign, bool]]) -> None:
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            out.append((stmt, conditional))
        elif isinstance(stmt, ast.If | ast.For | ast.While | ast.Try | ast.With):
            nested = not isinstance(stmt, ast.With)
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(stmt, field, []):
                    if isinstance(child, ast.ExceptHandler):
                        _ties_in(child.body, True, out)
                    elif isinstance(child, ast.stmt):
                        _ties_in([child], conditional or nested, out)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


def class_ties(classes: tuple[ClassRef, ...], script: Path) -> tuple[Tie, ...]:
    """The weights the constructor of ``classes[0]`` (its ``__init__``, those of its workspace
    bases, and the methods ``__init__`` calls on ``self``) ties: ``self.a.weight =
    self.b.weight``."""
    if any(_method(ref.node, "_apply") is not None for ref in classes):
        # The class re-ties its weights after a move itself (llm67m's GPT overrides ``_apply``
        # to restore ``lm_head.weight = wte.weight``, held-out 73's control).
        return ()
    ties: list[Tie] = []
    for ref in classes:
        init = _method(ref.node, "__init__")
        if init is None:
            continue
        bodies = [(init, False)]
        for node in ast.walk(init):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
                and (called := _method(ref.node, node.func.attr)) is not None
            ):
                bodies.append((called, True))  # its ties may depend on the call's arguments
        for fn, conditional in bodies:
            found: list[tuple[ast.Assign, bool]] = []
            _ties_in(fn.body, conditional, found)
            for stmt, under in found:
                target = _self_path(stmt.targets[0])  # type: ignore[arg-type]
                value = _self_path(stmt.value)
                if target is None or value is None or target == value:
                    continue
                if target.rpartition(".")[2] not in PARAMETER_ATTRS:
                    continue
                if value.rpartition(".")[2] not in PARAMETER_ATTRS:
                    continue
                where = (
                    f"line {line_ref(stmt.lineno)}"
                    if ref.path == script
                    else f"{ref.path.name}:{stmt.lineno}"
                )
                ties.append(Tie(target, value, under, where))
    return tuple(ties)


def _constructor(model: ScriptModel, value: ast.expr) -> ast.Call | None:
    """The constructor call at the root of ``value`` (``GPT(cfg)``, ``GPT(cfg).to(d)``)."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in SELF_RETURNING
    ):
        value = value.func.value
    return value if isinstance(value, ast.Call) else None


def _hf_tied(model: ScriptModel, call: ast.Call) -> bool:
    q = model.call_name(call) or ""
    if not q.startswith("transformers."):
        return False
    parts = q.split(".")
    cls = parts[-2] if parts[-1] in CONSTRUCTORS else parts[-1]
    return cls.endswith(HF_TIED_SUFFIXES)


def _own_ties(model: ScriptModel, call: ast.Call) -> tuple[Tie, ...]:
    memo: dict[int, tuple[Tie, ...]] = model.memo((CODE, "ties"), dict)
    if id(call) not in memo:
        ties: tuple[Tie, ...] = ()
        func = call.func
        if isinstance(func, ast.Name | ast.Attribute):
            if model.path and not model.path.startswith("<"):
                ref = class_reference(script_module(model), func)
                if ref is None and isinstance(func, ast.Attribute):
                    # ``GPT.from_pretrained(name)``: a classmethod building the class.
                    ref = class_reference(script_module(model), func.value)
                    if ref is not None and not _is_classmethod(ref.node, func.attr):
                        ref = None
                if ref is not None:
                    ties = class_ties(chain(ref), Path(model.path))
                elif len(classes := built(model, call)) == 1:
                    ties = class_ties(chain(classes[0]), Path(model.path))
                else:
                    ties = _factory_ties(model, call)
            elif (own := _script_class(model, func)) is not None:
                ties = class_ties((own,), Path(model.path or "<script>"))
        memo[id(call)] = ties
    return memo[id(call)]


def _factory_ties(model: ScriptModel, call: ast.Call) -> tuple[Tie, ...]:
    """``model = init_model()``: a function of the script whose every return builds the same
    tied class (``model = Transformer(cfg)`` in each branch, then ``return model``)."""
    fn = model.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if not isinstance(fn, ast.FunctionDef):
        return ()
    values: list[ast.expr] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            if isinstance(node.value, ast.Name):
                name = node.value.id
                values += [
                    a.value
                    for a in ast.walk(fn)
                    if isinstance(a, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == name for t in a.targets)
                ]
            else:
                values.append(node.value)
    found: set[tuple[Tie, ...]] = set()
    for value in values:
        built_here = _constructor(model, value)
        if (
            built_here is None
            or isinstance(built_here.func, ast.Name)
            and built_here.func.id == fn.name
        ):
            return ()
        found.add(_own_ties(model, built_here))
    return found.pop() if len(found) == 1 else ()


def _is_classmethod(cls: ast.ClassDef, name: str) -> bool:
    method = _method(cls, name)
    return method is not None and any(
        isinstance(d, ast.Name) and d.id == "classmethod" for d in method.decorator_list
    )


def _script_class(model: ScriptModel, func: ast.expr) -> ClassRef | None:
    """A class of an unsaved script (no path: its module cannot be indexed from disk)."""
    if not isinstance(func, ast.Name):
        return None
    for stmt in model.tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == func.id:
            return ClassRef(Path(model.path or "<script>"), stmt, None)  # type: ignore[arg-type]
    return None


def _retied_after(model: ScriptModel, scope: ast.AST, name: str, line: int) -> bool:
    for node in model.walk_scope(scope):
        if getattr(node, "lineno", 0) <= line:
            continue
        if isinstance(node, ast.Call) and method_name(node) == "tie_weights":
            return True
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = ast.unparse(node.targets[0])
            value = ast.unparse(node.value)
            if target.startswith(f"{name}.") and value.startswith(f"{name}."):
                return True
    return False


def _bindings(model: ScriptModel) -> Iterator[tuple[ast.Assign, str, ast.Call]]:
    """``name = <constructor>`` (moved in the same statement or not), for the constructors
    of tied models."""
    for node in model.nodes_of(ast.Assign):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        call = _constructor(model, node.value)
        if call is not None:
            yield node, node.targets[0].id, call


def _rebound_between(
    model: ScriptModel,
    scope: ast.AST,
    name: str,
    binding: ast.Assign,
    stmt: ast.stmt,
    tied_bindings: set[int],
) -> bool:
    """Whether ``name`` is bound again after ``binding`` and before ``stmt`` to anything but
    the same module moved (``model = model.to(d)``) or another tied model."""
    for node in model.walk_scope(scope):
        if (
            isinstance(node, ast.Assign)
            and node is not binding
            and id(node) not in tied_bindings
            and node is not stmt
            and binding.lineno < node.lineno < stmt.lineno
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ):
            value = node.value
            while isinstance(value, ast.Call) and method_name(value) in SELF_RETURNING:
                value = value.func.value  # type: ignore[attr-defined]
            if not (isinstance(value, ast.Name) and value.id == name):
                return True
    return False


def _moves_of(model: ScriptModel, scope: ast.AST, name: str, after: int) -> list[ast.Call]:
    return [
        n
        for n in model.walk_scope(scope)
        if isinstance(n, ast.Call)
        and getattr(n, "lineno", 0) >= after
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == name
        and moves_to_a_device(model, n)
    ]


def _frozen_names(model: ScriptModel) -> set[str]:
    """Models the script never trains (``ref_model.requires_grad_(False)``, or put in eval mode
    and never back in train mode, their parameters handed nowhere): untied copies of a frozen
    model keep the same values, so its outputs do not change."""
    frozen: set[str] = set()
    evaluated: set[str] = set()
    trained: set[str] = set()
    for call in model.calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            continue
        name = func.value.id
        if func.attr == "requires_grad_" and call.args:
            arg = call.args[0]
            if isinstance(arg, ast.Constant) and arg.value is False:
                frozen.add(name)
        elif func.attr == "eval":
            evaluated.add(name)
        elif func.attr in ("train", "parameters", "named_parameters", "configure_optimizers"):
            trained.add(name)
    return frozen | (evaluated - trained)


def _applies(model: ScriptModel) -> bool:
    if model.uses_trainer or ownership(model).framework is not None:
        return False  # the HF Trainer re-ties after its move; accelerate/Lightning move it
    if not (being_converted(model) or uses_xla_device(model)):
        return False
    # Untied copies hold the same values until an optimizer updates one of them: a script
    # that only evaluates (hellaswag.py scoring GPT-2) computes the same either way.
    return bool(model.training_loops) or any(_is_optimizer_class(model, c) for c in model.calls)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if not _applies(model):
        return
    tied = [
        (binding, name, constructor, hf, ties)
        for binding, name, constructor in _bindings(model)
        if (hf := _hf_tied(model, constructor)) or (ties := _own_ties(model, constructor))
    ]
    # ``model = GPT(cfg)`` / ``model = GPT.from_pretrained(...)`` in the branches of an if: each
    # binds the same kind of model, moved once after them.
    tied_bindings = {id(b) for b, *_ in tied}
    frozen = _frozen_names(model)
    reported: set[int] = set()
    for binding, name, constructor, hf, ties in tied:
        if name in frozen:
            continue
        if hf:
            ties = ()
        scope = model.enclosing_function(binding) or model.tree
        moved_here = binding.value is not constructor and moves_to_a_device(
            model,
            binding.value,  # type: ignore[arg-type]
        )
        moves = [binding.value] if moved_here else []
        moves += _moves_of(model, scope, name, binding.lineno + 1)
        for move in moves:
            assert isinstance(move, ast.Call)
            stmt = model.enclosing_statement(move)
            if stmt is None or _rebound_between(model, scope, name, binding, stmt, tied_bindings):
                break  # the name holds something else by then (``model = DDP(model)``)
            if _retied_after(model, scope, name, stmt.end_lineno or stmt.lineno):
                break
            if id(move) not in reported:
                reported.add(id(move))
                yield _finding(model, move, stmt, name, ties, hf)
            break  # one re-tie, after the first move, serves the later ones


def _finding(
    model: ScriptModel, move: ast.Call, stmt: ast.stmt, name: str, ties: tuple[Tie, ...], hf: bool
) -> Finding:
    if hf:
        shared = "its input and output embeddings (tied by the model's config)"
        code = f"{name}.tie_weights()"
        reason = ""
    else:
        shared = ", ".join(f"`{t.target}` is `{t.value}` ({t.where})" for t in ties)
        code = "\n".join(f"{name}.{t.target} = {name}.{t.value}" for t in ties)
        conditional = [t for t in ties if t.conditional]
        reason = (
            f"the tie at {conditional[0].where} is made only under a condition (or in a method "
            "the constructor calls with arguments): re-tied here unconditionally, it would tie "
            "a model the original leaves untied; keep it under the same condition"
            if conditional
            else ""
        )
    # The statement is the move itself (``model.to(d)``, ``model = GPT(cfg).to(d)``,
    # ``model = model.to(d)``): right after it the name holds the bare, moved model.
    moved_in_place = (isinstance(stmt, ast.Expr) and stmt.value is move) or (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == name
        and stmt.value is move
    )
    message = (
        f"moving `{name}` to the XLA device unties its shared weights: {shared}. XLA copies "
        "each module's parameters separately, so the shared weight becomes two tensors that "
        "train apart (no error); re-tie them after the move"
    )
    manual = f"Re-tie after the move, before building the optimizer: `{code.splitlines()[0]}`."
    if reason and moved_in_place:
        ops = _retie_where_tied(model, stmt, name, ties)
        if ops is not None:
            # Whether the tie was made is read before the move and kept after it: exact
            # whatever the condition was, so no review is needed.
            title = f"Re-tie the shared weights after the move where they were tied: {name}"
            fix = Fix(title, ops)
            return Finding(CODE, message, model.span(move), Severity.WARNING, fix=fix)
        # ``model = Net(..., tied).to(d)``: nothing holds the model before the move to ask
        # whether it was tied, and re-tying it always would tie a model left untied.
        message += (
            f" (the tie at {[t for t in ties if t.conditional][0].where} is made only under a "
            "condition: no fix, keep the re-tie under the same condition)"
        )
        return Finding(CODE, message, model.span(move), Severity.WARNING, manual=manual)
    if not moved_in_place:
        # ``DDP(model.to(d))``, ``self.model = model.to(d)``: the name no longer holds the
        # bare model right after this statement.
        return Finding(CODE, message, model.span(move), Severity.WARNING, manual=manual)
    fix = Fix(
        f"Re-tie the shared weights after the move: {code.splitlines()[0]}",
        (InsertAfter(model.span(stmt), code),),
        safe=not reason,
        review_reason=reason,
    )
    if reason:
        message += f" (the fix needs review: {reason})"
    return Finding(CODE, message, model.span(move), Severity.WARNING, fix=fix)


def _retie_where_tied(
    model: ScriptModel, stmt: ast.stmt, name: str, ties: tuple[Tie, ...]
) -> tuple | None:
    """``was_tied = m.a is m.b`` before ``m.to(d)`` / ``m = m.to(d)`` and ``if was_tied: m.a =
    m.b`` after it, for each tie made under a condition; None when the name does not hold the
    model before the statement (``m = Net(...).to(d)``) or no free flag name is found."""
    value = stmt.value if isinstance(stmt, ast.Expr | ast.Assign) else None
    receiver = (
        value.func.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
        else None
    )
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        if method_name(receiver) not in SELF_RETURNING:
            return None
        receiver = receiver.func.value
    if not (isinstance(receiver, ast.Name) and receiver.id == name):
        return None
    before: list[str] = []
    after: list[str] = []
    for i, tie in enumerate(ties):
        line = f"{name}.{tie.target} = {name}.{tie.value}"
        if not tie.conditional:
            after.append(line)
            continue
        flag = _free_name(model, f"{name}_tied" if i == 0 else f"{name}_tied_{i}")
        if flag is None:
            return None
        before.append(f"{flag} = {name}.{tie.target} is {name}.{tie.value}")
        after.append(f"if {flag}:\n    {line}")
    span = model.span(stmt)
    return (InsertBefore(span, "\n".join(before)), InsertAfter(span, "\n".join(after)))


def _free_name(model: ScriptModel, name: str) -> str | None:
    for candidate in (name, f"{name}_", f"{name}__"):
        if not model.name_nodes(candidate) and candidate not in model.functions:
            return candidate
    return None


RULE = Rule(
    code=CODE,
    name="tied-weights-move",
    category=Category.CORRECTNESS,
    summary="a model with tied weights moved to the XLA device: the move unties them → re-tie after the move",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={},
)
