"""Whether the rest of the iteration changes what a deferred report reads before the sync
runs it: ``self.log(loss=loss.item())`` whose ``log`` reads ``self.step``, with
``self.step.add_(1)`` before the sync, would log every step one late. Part of XLA401.

A change: an assignment, augmented assignment or ``del`` of a read path or of anything under
it; a method call on it or under it that is not a known read (``add_``, ``update``,
``append``, ``step``...), except further reports to the report's own sink (``pbar.update(1)``,
``writer.flush()``); a method of the loop's class called on ``self`` (followed into its body
when shown, a change when not); handing it to an in-place function (``clip_grad_norm_``), a
collective, or a function of the script that changes it; rebinding a global the report reads
when it runs."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.line_refs import line_ref
from ...semantic.model import SCOPE_TYPES, ScriptModel, TrainingLoop, method_name, receiver
from ...semantic.tensors import scope_of
from .closure_reads import (
    MAX_DEPTH,
    READ_METHODS,
    Path,
    Reads,
    arguments,
    bind_parameters,
    class_of,
    frame_names,
    key_part,
    map_path,
    method_of,
    path_of,
    shown,
)
from .closure_timing import after, region_statements

# Calls to a report's own sink that only report more (they change nothing it reports).
SINK_REPORTS = frozenset(
    """
    info debug warning error critical exception log write set_postfix set_postfix_str
    set_description set_description_str master_print print update refresh flush
    """.split()
)
COLLECTIVES = frozenset(
    {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all"}
)


def changed_before_sync(
    model: ScriptModel,
    loop: TrainingLoop,
    stmt: ast.Expr,
    captured: list[str],
    reporting: bool = True,
) -> str | None:
    """Why deferring ``stmt``'s call to the step's sync could change what it reports (None:
    nothing it reads changes in the rest of the iteration). ``captured``: the names the
    closure takes as arguments (bound now; rebinding them later changes nothing)."""
    call = stmt.value
    assert isinstance(call, ast.Call)
    reads = Reads(model, stmt, frozenset(captured))
    reads.of_call(call)
    if not reads.paths:
        return None
    # An optimizer's learning rate (``opt.param_groups[0]['lr']``) is changed by a scheduler's
    # step, a call on another object (held-out 16, pytorch-cifar100: every printed LR was
    # the next step's).
    lr_read = next((p for p in reads.paths if any("param_groups" in part for part in p)), None)
    # The report's own names keep their identity (it reads them), a loop's element others.
    elements = {
        name: path
        for name, path in element_aliases(model, scope_of(model, stmt), {}).items()
        if all(read[0] != name for read in reads.paths)
    }
    for node in rest_of_iteration(model, loop, stmt):
        if node is stmt:
            continue  # its own later passes are deferred too, and closures run in order
        if lr_read is not None and _scheduler_step(model, node):
            return (
                f"the deferred call runs at the step's sync; {reads.paths[lr_read]} "
                f"`{shown(lr_read)}`, and line {line_ref(node.lineno)} "
                f"(`{model.segment(node)}`) steps a learning-rate scheduler first: it would "
                "report the next step's learning rate"
            )
        change = Changes(model, reads, class_of(model, stmt)).at(node, elements, 0)
        if change is None:
            continue
        path, line, text = change
        what = reads.paths[path]
        where = f"the deferred call runs at the step's sync; {what} `{shown(path)}`, and line {line_ref(line)}"
        kind = _kind(node, path)
        if kind in ("removes", "may remove"):
            would = "would" if kind == "removes" else "may"
            return f"{where} removes it first (`{text}`): it {would} raise KeyError"
        if kind is not None:
            return (
                f"{where} re-creates `{kind}` first (`{text}`): it would look `{shown(path)}` up "
                "in the new one, a KeyError unless the key is set again before the sync, else a "
                "later value"
            )
        uses = "report" if reporting else "work on"
        return f"{where} changes it first (`{text}`): it may {uses} the changed value"
    return None


REMOVING = frozenset({"pop", "popitem", "clear"})
SCHEDULER_FACTORIES = (
    "torch.optim.lr_scheduler.",
    "transformers.get_",
    "transformers.optimization.",
)


def _scheduler_step(model: ScriptModel, node: ast.AST) -> bool:
    """``scheduler.step()`` / ``self.lr_scheduler.step()``: a name or attribute spelled like a
    scheduler, or bound from torch's or transformers' scheduler factories."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    call = node.value
    if method_name(call) != "step":
        return False
    recv = receiver(call)
    name = recv.attr if isinstance(recv, ast.Attribute) else getattr(recv, "id", "")
    if "sched" in name.lower():
        return True
    return isinstance(recv, ast.Name) and any(
        isinstance(v, ast.Call) and (model.call_name(v) or "").startswith(SCHEDULER_FACTORIES)
        for v in model.assigned_from(recv.id)
    )


def _kind(node: ast.AST, read: Path) -> str | None:
    """``removes`` when ``node`` deletes the key ``read`` looks up (``del logs["loss"]``,
    ``logs.pop("loss")``, ``logs.clear()``; ``may remove`` for a key not known here); the
    container's text when it binds a new container the key is looked up in (``logs = {}``);
    None for other changes."""
    keyed = [i for i, p in enumerate(read) if p.startswith("[")]
    if not keyed:
        return None
    container = read[: keyed[-1]]
    if isinstance(node, ast.Delete):
        for t in node.targets:
            if isinstance(t, ast.Subscript) and path_of(t) in (read, container):
                return "removes" if key_part(t) is not None else "may remove"
        return None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        if method_name(call) in REMOVING and path_of(receiver(call)) == container:
            known = method_name(call) == "clear" or (
                bool(call.args) and isinstance(call.args[0], ast.Constant)
            )
            return "removes" if known else "may remove"
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(
            path_of(t) == container and not (isinstance(t, ast.Subscript) and key_part(t) is None)
            for t in targets
        ):
            return shown(container)
    return None


def _writer_report(name: str) -> bool:
    """``writer.add_figure(...)``, ``add_histogram``...: a summary writer's reports."""
    return name.startswith("add_") and len(name) > len("add_")


# --- what the rest of the iteration changes ----------------------------------------------------
def rest_of_iteration(model: ScriptModel, loop: TrainingLoop, stmt: ast.stmt) -> list[ast.AST]:
    """Statements that can run between ``stmt`` and the step's sync: the rest of its block
    and of the loops around it (their later passes too, up to the training loop)."""
    out: list[ast.AST] = []
    inner_loops = []
    for a in model.ancestors(stmt):
        if a is loop.node or isinstance(a, SCOPE_TYPES):
            break
        if isinstance(a, ast.For | ast.While | ast.AsyncFor):
            inner_loops.append(a)
    region = loop.node
    if not any(a is loop.node for a in model.ancestors(stmt)):
        region = next(
            (r for r in loop.regions() if any(a is r for a in model.ancestors(stmt))), None
        )
        if region is None:
            return out
        out.extend(region_statements(model, loop.node))
    for node in region_statements(model, region):
        if after(node, stmt):
            out.append(node)
    for inner in inner_loops:
        out.extend(region_statements(model, inner))
    # The first change in the source is the one to name.
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


# Methods that change their receiver, for ``Changes(strict=True)``.
MUTATORS = frozenset(
    """
    append extend insert update add setdefault pop popitem remove clear discard appendleft
    """.split()
)


class Changes:
    """``strict``: only what provably changes a path (stores, known mutators, in-place
    methods, bodies shown here), not every call xla-lens cannot see into."""

    def __init__(
        self, model: ScriptModel, reads: Reads, cls: ast.ClassDef | None, strict: bool = False
    ) -> None:
        self.model = model
        self.reads = reads
        self.cls = cls
        self.strict = strict

    def at(
        self, stmt: ast.AST, mapping: dict[str, Path], depth: int
    ) -> tuple[Path, int, str] | None:
        """The first read path ``stmt`` (its own expressions, not nested statements) changes."""
        targets: list[ast.AST] = []
        if isinstance(stmt, ast.Assign):
            targets = list(stmt.targets)
        elif isinstance(stmt, ast.AugAssign | ast.AnnAssign):
            targets = [stmt.target]
        elif isinstance(stmt, ast.Delete):
            targets = list(stmt.targets)
        for t in targets:
            for part in t.elts if isinstance(t, ast.Tuple | ast.List) else [t]:
                hit = self._stored(part, stmt, mapping)
                if hit is not None:
                    return hit, stmt.lineno, self._text(stmt)
        for node in self._own_nodes(stmt):
            if isinstance(node, ast.Call):
                hit = self._called(node, mapping, depth)
                if hit is not None:
                    return hit, stmt.lineno, self._text(node)
        return None

    def _own_nodes(self, stmt: ast.AST) -> Iterator[ast.AST]:
        todo = [c for c in ast.iter_child_nodes(stmt) if not isinstance(c, ast.stmt)]
        while todo:
            node = todo.pop()
            yield node
            if not isinstance(node, SCOPE_TYPES):
                todo.extend(ast.iter_child_nodes(node))

    def _text(self, node: ast.AST) -> str:
        text = " ".join(self.model.segment(node).split())
        return text if len(text) <= 60 else text[:57] + "..."

    def _related(self, path: Path | None) -> Path | None:
        """The read path ``path`` overlaps (a prefix of it or under it; ``[*]``, an element
        a loop took, stands for any key)."""
        if path is None:
            return None
        for read in self.reads.paths:
            if all(a == b or ANY_ELEMENT in (a, b) for a, b in zip(read, path, strict=False)):
                return read
        return None

    def _stored(self, target: ast.AST, stmt: ast.AST, mapping: dict[str, Path]) -> Path | None:
        path = map_path(path_of(target), mapping)
        if path is None:
            return None
        if isinstance(target, ast.Name):
            # Rebinding a name: the closure holds the old object (its argument) unless the
            # name is a global it reads when it runs, or ``+=`` changes a tensor or list in place.
            read = self._related(path)
            # ``logs = {}`` rebinds what ``logs["loss"]`` looks its key up in.
            if read is None or tuple(p for p in read if not p.startswith("[")) != path:
                return None
            if target.id in self.reads.late_globals and self._is_global_here(target):
                return read
            if isinstance(stmt, ast.AugAssign) and self._mutable(target):
                return read
            return None
        return self._related(path)

    def _is_global_here(self, name: ast.Name) -> bool:
        if not self.reads._is_global(name.id):
            return False
        scope = scope_of(self.model, name)
        if scope is self.model.tree:
            return True
        return any(
            isinstance(g, ast.Global) and name.id in g.names for g in self.model.walk_scope(scope)
        )

    def _mutable(self, name: ast.Name) -> bool:
        if self.reads.tensors.is_tensor(name):
            return True
        values = self.model.assigned_from(name.id)
        return any(isinstance(v, ast.List | ast.Dict | ast.Set | ast.ListComp) for v in values)

    def _called(self, call: ast.Call, mapping: dict[str, Path], depth: int) -> Path | None:
        model = self.model
        name = method_name(call)
        recv = receiver(call)
        rpath = map_path(path_of(recv), mapping) if recv is not None else None
        if rpath is not None and name is not None:
            read = self._related(rpath)
            if read is not None:
                hit = self._method_changes(call, recv, rpath, read, name, mapping, depth)
                if hit is not None:
                    return hit
        # Handed on: functions of this script are followed; of the others only those that
        # say they work in place (``clip_grad_norm_``) or are collectives (``all_reduce``)
        # are taken to change their arguments (Python code rarely changes what it is given).
        if isinstance(call.func, ast.Name) and model.qualname(call.func) is None:
            fn = model.functions.get(call.func.id)
            if fn is not None:
                return self._in_body(fn, call, {}, depth, mapping)
        plain = call.func.id if isinstance(call.func, ast.Name) else None
        callee = (model.call_name(call) or name or plain or "").split(".")[-1]
        qualname = model.call_name(call) or ""
        in_place = callee.endswith("_") and not callee.startswith("_")
        if not (in_place or callee in COLLECTIVES or qualname.startswith("torch.distributed.")):
            return None
        for arg in arguments(call):
            read = self._related(map_path(path_of(arg), mapping))
            if read is not None and not isinstance(arg, ast.Constant):
                return read
        return None

    def _method_changes(
        self,
        call: ast.Call,
        recv: ast.AST | None,
        rpath: Path,
        read: Path,
        name: str,
        mapping: dict[str, Path],
        depth: int,
    ) -> Path | None:
        if name in READ_METHODS:
            return None
        if rpath in self.reads.sinks and (name in SINK_REPORTS or _writer_report(name)):
            return None
        if len(rpath) < len(read) or self.strict:
            # ``self.advance()`` above ``self.step``: follow a method shown here.
            fn = method_of(self.model, self.cls or call, recv, name) if self.cls else None
            if fn is not None:
                first = fn.args.args[0].arg
                return self._in_body(fn, call, {first: rpath}, depth, mapping)
            if self.cls is not None and _attribute_of(self.model, self.cls, name):
                # ``self.model(x)``: calls the object held in ``self.model`` (it may change
                # that object), not a method that could change the rest of ``self``.
                return self._related(rpath + (name,))
        if self.strict and not (name in MUTATORS or (name.endswith("_") and name[0] != "_")):
            return None
        return read

    def _in_body(
        self,
        fn: ast.AST,
        call: ast.Call,
        mapping: dict[str, Path],
        depth: int,
        outer: dict[str, Path] | None = None,
    ) -> Path | None:
        if depth >= MAX_DEPTH or not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        mapping = bind_parameters(fn, call, mapping, outer)
        # The body's own names (parameters not bound to a path aside) are its objects, not
        # the caller's: ``logs = {}`` in a step function is another dict than the loop's.
        hidden: Path = ("_",)
        own = {n: hidden + (n,) for n in frame_names(self.model, fn).own if n not in mapping}
        mapping = {**own, **mapping}
        elements = element_aliases(self.model, fn, mapping)
        mapping.update({n: p for n, p in elements.items() if n in own})
        for stmt in self.model.walk_scope(fn):
            if isinstance(stmt, ast.stmt):
                hit = self.at(stmt, mapping, depth + 1)
                if hit is not None:
                    return hit[0]
        return None


ANY_ELEMENT = "[*]"


def element_aliases(
    model: ScriptModel, scope: ast.AST, mapping: dict[str, Path]
) -> dict[str, Path]:
    """``group`` in ``for group in opt.param_groups:`` (loops of ``scope``, not of nested
    functions) stands for an element of what it walks: ``group["lr"] = lr`` changes
    ``opt.param_groups[0]["lr"]`` (NeuS, held-out 136: a method setting the learning rate
    after the report made every deferred report print the next step's)."""
    out: dict[str, Path] = {}
    for node in model.walk_scope(scope):
        if isinstance(node, ast.For | ast.AsyncFor) and isinstance(node.target, ast.Name):
            path = map_path(path_of(node.iter), mapping)
            if path is not None:
                out[node.target.id] = path + (ANY_ELEMENT,)
    return out


def _attribute_of(model: ScriptModel, cls: ast.ClassDef, name: str) -> bool:
    """``self.<name>`` is an attribute holding an object (a model, an optimizer), not a
    method: assigned somewhere in ``cls`` and no method of that name in it."""

    def compute() -> tuple[frozenset[str], frozenset[str]]:
        out = set()
        for node in ast.walk(cls):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AnnAssign | ast.AugAssign):
                targets = [node.target]
            for t in targets:
                for part in t.elts if isinstance(t, ast.Tuple | ast.List) else [t]:
                    if (
                        isinstance(part, ast.Attribute)
                        and isinstance(part.value, ast.Name)
                        and part.value.id == "self"
                    ):
                        out.add(part.attr)
        methods = {
            s.name for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        return frozenset(out - methods), frozenset(methods)

    attributes, methods = model.memo((_attribute_of, cls), compute)
    # A class with no base but ``object`` has no method it does not show: anything else
    # called on ``self`` is an attribute's object, assigned where this file cannot see.
    plain = all(isinstance(b, ast.Name) and b.id == "object" for b in cls.bases)
    return name in attributes or (plain and name not in methods)
