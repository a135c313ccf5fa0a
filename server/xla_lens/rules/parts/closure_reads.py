"""What a report wrapped in ``xm.add_step_closure`` reads when it runs, at the step's sync,
and whether the rest of the iteration changes it first: ``self.log(loss=loss.item())``
whose ``log`` reads ``self.step``, with ``self.step.add_(1)`` before the sync, would log every
step one late. Part of XLA401.

What the deferred call reads: the objects and attributes its arguments name, module globals
it names, and, where its body is in this file (a method of the loop's class, a function of the
script), the attributes of ``self`` and of its parameters and the globals that body reads.
An object only used as the receiver of a call we cannot see (``self.accelerator.log(...)``,
``pbar.set_postfix(...)``) is where the report goes, not a value it reports; where the callee
itself cannot be seen, the object it is called on counts as read whole, except that further
reports to it (``pbar.update(1)``, ``writer.flush()``) do not change it.

What changes a read path: an assignment, augmented assignment or ``del`` of it or of anything
under it; a method call on it or under it that is not a known read (``add_``, ``update``,
``append``, ``step``...); passing it to a function that is neither a known reader nor shown
here (ours are followed); a method of the loop's class called on ``self`` (followed when shown,
a change when not); rebinding a global the report reads."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import SCOPE_TYPES, ScriptModel, TrainingLoop, method_name, receiver
from ...semantic.node_helpers import dotted
from ...semantic.tensors import HOST_METHODS, META_METHODS, TensorNames, scope_of
from .closure_timing import after

Path = tuple[str, ...]
MAX_DEPTH = 3
# Methods that only read their receiver.
READ_METHODS = (
    HOST_METHODS
    | META_METHODS
    | frozenset(
        """
        detach clone float double half bfloat16 long int bool mean sum norm max min abs std var
        argmax argmin get keys values items copy format count index state_dict parameters
        named_parameters modules children numel isnan isinf all any sqrt exp log10 pow to view
        reshape flatten squeeze unsqueeze type_as backward retain_grad register_hook new
        new_tensor new_zeros new_ones new_full new_empty sub mul div matmul eq ne gt lt ge le
        topk softmax log_softmax round contiguous expand repeat permute transpose chunk split
        gather index_select masked_fill sigmoid tanh neg clamp cuda join lower upper strip
        """.split()
    )
)
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
PATH_OF_CALL = frozenset({"parameters", "named_parameters", "modules", "children", "values"})


def changed_before_sync(
    model: ScriptModel, loop: TrainingLoop, stmt: ast.Expr, captured: list[str]
) -> str | None:
    """Why deferring ``stmt``'s call to the step's sync could change what it reports (None:
    nothing it reads changes in the rest of the iteration). ``captured``: the names the
    closure takes as arguments (bound now; rebinding them later changes nothing)."""
    call = stmt.value
    assert isinstance(call, ast.Call)
    reads = _Reads(model, stmt, frozenset(captured))
    reads.of_call(call)
    if not reads.paths:
        return None
    for node in _rest_of_iteration(model, loop, stmt):
        change = _Changes(model, reads, _class_of(model, stmt)).at(node, {}, 0)
        if change is None:
            continue
        path, line, text = change
        what = reads.paths[path]
        shown = ".".join(path)
        return (
            f"the deferred call runs at the step's sync; {what} `{shown}`, and line {line} "
            f"changes it first (`{text}`): it may report the changed value"
        )
    return None


# --- what the deferred call reads ------------------------------------------------------------
class _Reads:
    def __init__(self, model: ScriptModel, stmt: ast.stmt, captured: frozenset[str]) -> None:
        self.model = model
        self.stmt = stmt
        self.captured = captured
        self.late_globals: set[str] = set()  # globals read when the closure runs
        self.paths: dict[Path, str] = {}  # path -> how the call reads it (for the reason)
        self.sinks: set[Path] = set()
        self.tensors = TensorNames(model)
        scope = scope_of(model, stmt)
        self.local = _locals(model, scope) if scope is not model.tree else set()

    def add(self, path: Path, how: str) -> None:
        if path and path[0] != "_" and path not in self.paths:
            self.paths[path] = how

    def of_call(self, call: ast.Call) -> None:
        for arg in _arguments(call):
            self.of_expr(arg, "it reads", {})
        recv = receiver(call)
        name = method_name(call)
        if isinstance(call.func, ast.Name):
            fn = self.model.functions.get(call.func.id)
            if fn is not None and self.model.qualname(call.func) is None:
                self.of_body(fn, call, {}, f"`{call.func.id}` reads", 0)
            return
        rpath = _path(recv)
        if rpath is None:
            return
        fn = _method(self.model, self.stmt, recv, name)
        if fn is not None:
            self.of_body(fn, call, {fn.args.args[0].arg: rpath}, f"`{name}` reads", 0)
        else:
            # Further reports to it (``pbar.update(1)``) are not changes; anything else is.
            self.sinks.add(rpath)
            self.add(rpath, f"xla-lens cannot see `{'.'.join(rpath)}.{name}`, which is handed")

    def of_expr(self, expr: ast.AST, how: str, mapping: dict[str, Path]) -> None:
        for node in self.model.walk(expr):
            if not isinstance(node, ast.Name | ast.Attribute):
                continue
            parent = self.model.parent(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue  # only the longest chain
            path = _path(node)
            if path is None:
                continue
            if isinstance(parent, ast.Call) and parent.func is node and len(path) > 1:
                # ``x.method(...)``: a read of ``x`` when the method only reads.
                if path[-1] not in READ_METHODS:
                    continue
                path = path[:-1]
            elif isinstance(parent, ast.Call) and parent.func is node:
                continue  # a plain function's name
            mapped = _map(path, mapping)
            if mapped is not None and self._interesting(mapped, mapping):
                self.add(mapped, how)
                in_body = any(a is self.stmt for a in self.model.ancestors(node)) is False
                if self._is_global(mapped[0]) and (in_body or mapped[0] not in self.captured):
                    self.late_globals.add(mapped[0])

    def of_body(
        self, fn: ast.AST, call: ast.Call, mapping: dict[str, Path], how: str, depth: int
    ) -> None:
        if depth > MAX_DEPTH or not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        params = [a.arg for a in fn.args.args]
        offset = 1 if mapping else 0
        for i, arg in enumerate(call.args):
            if i + offset < len(params) and (p := _map(_path(arg), {})) is not None:
                mapping = {**mapping, params[i + offset]: p}
        for kw in call.keywords:
            if kw.arg in params and (p := _map(_path(kw.value), {})) is not None:
                mapping = {**mapping, kw.arg: p}
        fn_locals = _locals(self.model, fn)
        for node in self.model.walk_scope(fn):
            if isinstance(node, ast.Name | ast.Attribute):
                path = _path(node)
                if path is None:
                    continue
                root = path[0]
                if root in mapping or (root not in fn_locals and self._is_global(root)):
                    self.of_expr(node, how, mapping)
            elif isinstance(node, ast.Call):
                recv = receiver(node)
                rpath = _map(_path(recv), mapping) if recv is not None else None
                inner = _method(self.model, fn, recv, method_name(node)) if recv else None
                if inner is not None and rpath is not None:
                    first = inner.args.args[0].arg if inner.args.args else "self"
                    self.of_body(inner, node, {first: rpath}, how, depth + 1)

    def _interesting(self, path: Path, mapping: dict[str, Path]) -> bool:
        root = path[0]
        if root in ("self", "cls") or any(path[: len(v)] == v for v in mapping.values()):
            return True
        return root in self.local or self._is_global(root)

    def _is_global(self, name: str) -> bool:
        return name in _module_names(self.model) and name not in self.model.imports


def _module_names(model: ScriptModel) -> frozenset[str]:
    """Names the module itself binds (its globals, functions and classes aside)."""

    def compute() -> frozenset[str]:
        out = set()
        for stmt in model.walk_scope(model.tree):
            if isinstance(stmt, ast.Name) and isinstance(stmt.ctx, ast.Store):
                out.add(stmt.id)
        return frozenset(out)

    return model.memo(_module_names, compute)


def _locals(model: ScriptModel, scope: ast.AST) -> set[str]:
    out = {a.arg for a in model.walk(scope) if isinstance(a, ast.arg)}
    declared: set[str] = set()
    for n in model.walk_scope(scope):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.Global | ast.Nonlocal):
            declared.update(n.names)
    return out - declared


def _path(node: ast.AST | None) -> Path | None:
    text = dotted(node) if node is not None else None
    if text is None and isinstance(node, ast.Subscript):
        return _path(node.value)
    if (
        text is None
        and isinstance(node, ast.Call)
        and method_name(node) in PATH_OF_CALL
        and (r := receiver(node)) is not None
    ):
        return _path(r)
    return tuple(text.split(".")) if text else None


def _map(path: Path | None, mapping: dict[str, Path]) -> Path | None:
    if path is None:
        return None
    if path[0] in mapping:
        return mapping[path[0]] + path[1:]
    return path


def _writer_report(name: str) -> bool:
    """``writer.add_figure(...)``, ``add_histogram``...: a summary writer's reports."""
    return name.startswith("add_") and len(name) > len("add_")


def _arguments(call: ast.Call) -> Iterator[ast.expr]:
    for a in call.args:
        yield a.value if isinstance(a, ast.Starred) else a
    for k in call.keywords:
        yield k.value


def _class_of(model: ScriptModel, node: ast.AST) -> ast.ClassDef | None:
    for a in model.ancestors(node):
        if isinstance(a, ast.ClassDef):
            return a
    return None


def _method(
    model: ScriptModel, where: ast.AST, recv: ast.AST | None, name: str | None
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method ``self.name`` of the class around ``where`` (None: not shown here)."""
    if not (isinstance(recv, ast.Name) and recv.id == "self" and name):
        return None
    cls = where if isinstance(where, ast.ClassDef) else _class_of(model, where)
    if cls is None:
        return None
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
            if any(dotted(d) == "property" for d in stmt.decorator_list):
                return None
            return stmt if stmt.args.args else None
    return None


# --- what the rest of the iteration changes ----------------------------------------------------
def _rest_of_iteration(model: ScriptModel, loop: TrainingLoop, stmt: ast.stmt) -> list[ast.AST]:
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
        out.extend(n for n in model.walk_scope(loop.node) if isinstance(n, ast.stmt))
    for node in model.walk_scope(region):
        if isinstance(node, ast.stmt) and after(node, stmt):
            out.append(node)
    for inner in inner_loops:
        out.extend(n for n in model.walk_scope(inner) if isinstance(n, ast.stmt))
    # The first change in the source is the one to name.
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


class _Changes:
    def __init__(self, model: ScriptModel, reads: _Reads, cls: ast.ClassDef | None) -> None:
        self.model = model
        self.reads = reads
        self.cls = cls

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

    def _related(self, path: Path | None, whole: bool = False) -> Path | None:
        """The read path ``path`` overlaps (a prefix of it or under it)."""
        if path is None:
            return None
        for read in self.reads.paths:
            n = min(len(read), len(path))
            if read[:n] == path[:n]:
                return read
        return None

    def _stored(self, target: ast.AST, stmt: ast.AST, mapping: dict[str, Path]) -> Path | None:
        path = _map(_path(target), mapping)
        if path is None:
            return None
        if isinstance(target, ast.Name):
            # Rebinding a name: the closure holds the old object (its argument) unless the
            # name is a global it reads when it runs, or ``+=`` changes a tensor or list in place.
            read = self._related(path)
            if read is None or read != path:
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
        rpath = _map(_path(recv), mapping) if recv is not None else None
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
                return self._in_body(fn, call, {}, depth)
        plain = call.func.id if isinstance(call.func, ast.Name) else None
        callee = (model.call_name(call) or name or plain or "").split(".")[-1]
        qualname = model.call_name(call) or ""
        in_place = callee.endswith("_") and not callee.startswith("_")
        if not (in_place or callee in COLLECTIVES or qualname.startswith("torch.distributed.")):
            return None
        for arg in _arguments(call):
            read = self._related(_map(_path(arg), mapping))
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
        if len(rpath) < len(read):
            # ``self.advance()`` above ``self.step``: follow a method shown here.
            fn = _method(self.model, self.cls or call, recv, name) if self.cls else None
            if fn is not None:
                first = fn.args.args[0].arg
                return self._in_body(fn, call, {first: rpath}, depth)
        return read

    def _in_body(
        self, fn: ast.AST, call: ast.Call, mapping: dict[str, Path], depth: int
    ) -> Path | None:
        if depth >= MAX_DEPTH or not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        params = [a.arg for a in fn.args.args]
        offset = 1 if mapping else 0
        for i, arg in enumerate(call.args):
            p = _path(arg)
            if i + offset < len(params) and p is not None:
                mapping = {**mapping, params[i + offset]: p}
        for kw in call.keywords:
            p = _path(kw.value)
            if kw.arg in params and p is not None:
                mapping = {**mapping, kw.arg: p}
        for stmt in self.model.walk_scope(fn):
            if isinstance(stmt, ast.stmt):
                hit = self.at(stmt, mapping, depth + 1)
                if hit is not None:
                    return hit[0]
        return None
