"""What a report wrapped in ``xm.add_step_closure`` reads when it runs, at the step's sync
(``closure_changes`` asks whether the rest of the iteration changes it first). Part of XLA401.

The objects and attributes its arguments name, module globals it names, and, where its body is
in this file (a method of the loop's class, a function of the script), the attributes of
``self`` and of its parameters and the globals that body reads. An object only used as the
receiver of a call we cannot see (``self.accelerator.log(...)``) is where the report goes, not
a value it reports; where the deferred callee itself cannot be seen (``pbar.set_postfix``,
``self.log`` of a base class), the object it is called on counts as read whole."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ...semantic.model import SCOPE_TYPES, ScriptModel, method_name, receiver
from ...semantic.node_helpers import dotted
from ...semantic.tensors import HOST_METHODS, META_METHODS, TensorNames, scope_of

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
PATH_OF_CALL = frozenset({"parameters", "named_parameters", "modules", "children", "values"})


# --- what the deferred call reads ------------------------------------------------------------
class Reads:
    def __init__(self, model: ScriptModel, stmt: ast.stmt, captured: frozenset[str]) -> None:
        self.model = model
        self.stmt = stmt
        self.captured = captured
        self.late_globals: set[str] = set()  # globals read when the closure runs
        self.paths: dict[Path, str] = {}  # path -> how the call reads it (for the reason)
        self.sinks: set[Path] = set()
        self.tensors = TensorNames(model)
        scope = scope_of(model, stmt)
        self.local = _locals(model, scope) if scope is not model.tree else frozenset()

    def add(self, path: Path, how: str) -> None:
        if path and path[0] != "_" and path not in self.paths:
            self.paths[path] = how

    def of_call(self, call: ast.Call) -> None:
        for arg in arguments(call):
            self.of_expr(arg, "it reads", {})
        recv = receiver(call)
        name = method_name(call)
        if isinstance(call.func, ast.Name):
            fn = self.model.functions.get(call.func.id)
            if fn is not None and self.model.qualname(call.func) is None:
                self.of_body(fn, call, {}, f"`{call.func.id}` reads", 0)
            return
        rpath = path_of(recv)
        if rpath is None:
            return
        fn = method_of(self.model, self.stmt, recv, name)
        if fn is not None:
            self.of_body(fn, call, {fn.args.args[0].arg: rpath}, f"`{name}` reads", 0)
        else:
            # Further reports to it (``pbar.update(1)``) are not changes; anything else is.
            self.sinks.add(rpath)
            self.add(rpath, f"xla-lens cannot see `{shown(rpath)}.{name}`, which is handed")

    def of_expr(self, expr: ast.AST, how: str, mapping: dict[str, Path]) -> None:
        for node in self.model.walk(expr):
            if not isinstance(node, ast.Name | ast.Attribute):
                continue
            parent = self.model.parent(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue  # only the longest chain
            path = path_of(node)
            if path is None:
                continue
            if isinstance(parent, ast.Call) and parent.func is node and len(path) > 1:
                # ``x.method(...)``: a read of ``x`` when the method only reads.
                if path[-1] not in READ_METHODS:
                    continue
                path = path[:-1]
            elif isinstance(parent, ast.Call) and parent.func is node:
                continue  # a plain function's name
            path = with_keys(self.model, node, path)
            mapped = map_path(path, mapping)
            if mapped is not None and self._interesting(mapped, mapping):
                self.add(mapped, how)
                in_body = any(a is self.stmt for a in self.model.ancestors(node)) is False
                if self._is_global(mapped[0]) and (in_body or mapped[0] not in self.captured):
                    self.late_globals.add(mapped[0])

    def of_body(
        self,
        fn: ast.AST,
        call: ast.Call,
        mapping: dict[str, Path],
        how: str,
        depth: int,
        outer: dict[str, Path] | None = None,
    ) -> None:
        if depth > MAX_DEPTH or not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        mapping = bind_parameters(fn, call, mapping, outer)
        fn_locals = _locals(self.model, fn)
        for node in self.model.walk_scope(fn):
            if isinstance(node, ast.Name | ast.Attribute):
                path = path_of(node)
                if path is None:
                    continue
                root = path[0]
                if root in mapping or (root not in fn_locals and self._is_global(root)):
                    self.of_expr(node, how, mapping)
            elif isinstance(node, ast.Call):
                recv = receiver(node)
                rpath = map_path(path_of(recv), mapping) if recv is not None else None
                inner = method_of(self.model, fn, recv, method_name(node)) if recv else None
                if inner is not None and rpath is not None:
                    first = inner.args.args[0].arg if inner.args.args else "self"
                    self.of_body(inner, node, {first: rpath}, how, depth + 1, mapping)

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


def _locals(model: ScriptModel, scope: ast.AST) -> frozenset[str]:
    """Names ``scope`` binds itself (parameters of any function in it too)."""
    return frame_names(model, scope).own


_NAMING_NODES = (ast.Name, ast.arg, *SCOPE_TYPES, ast.Global, ast.Nonlocal)


@dataclass(frozen=True)
class FrameNames:
    """The names a frame binds, from one pass over it (once per frame: asked for every
    deferred report in it and for every function body a report is followed into)."""

    own: frozenset[str]  # its own stores, and every parameter in it, less global/nonlocal
    anywhere: frozenset[str]  # stored or deleted anywhere in it (nested frames too), parameters


def frame_names(model: ScriptModel, scope: ast.AST) -> FrameNames:
    def compute() -> FrameNames:
        params: set[str] = set()
        stored: set[str] = set()  # by the frame itself
        nested: set[str] = set()  # stored or deleted in a nested frame, or deleted by it
        declared: set[str] = set()
        # Every node under ``scope`` once: its own nodes, then each nested frame's.
        frames = [scope]
        while frames:
            frame = frames.pop()
            own = frame is scope
            for n in model.walk_scope(frame):
                if not isinstance(n, _NAMING_NODES):
                    continue  # most nodes: one check instead of one per kind below
                if isinstance(n, ast.Name):
                    if own and isinstance(n.ctx, ast.Store):
                        stored.add(n.id)
                    elif isinstance(n.ctx, ast.Store | ast.Del):
                        nested.add(n.id)
                elif isinstance(n, ast.arg):
                    params.add(n.arg)
                elif isinstance(n, SCOPE_TYPES):
                    frames.append(n)
                elif own and isinstance(n, ast.Global | ast.Nonlocal):
                    declared.update(n.names)
        return FrameNames(
            frozenset((params | stored) - declared), frozenset(params | stored | nested)
        )

    return model.memo((frame_names, scope), compute)


def key_part(sub: ast.Subscript) -> str | None:
    """``['loss']`` for ``logs["loss"]``: a constant key is a path part of its own, so a store
    to ``logs["lr"]`` is no change of ``logs["loss"]`` (any other key stands for all)."""
    key = sub.slice
    if isinstance(key, ast.Constant) and isinstance(key.value, str | int):
        return f"[{key.value!r}]"
    return None


def with_keys(model: ScriptModel, node: ast.AST, path: Path) -> Path:
    """``path`` of ``node`` extended by the constant keys it is indexed with
    (``logs["loss"]`` reads ``('logs', "['loss']")``)."""
    parent = model.parent(node)
    while isinstance(parent, ast.Subscript) and parent.value is node:
        key = key_part(parent)
        if key is None:
            break
        path, node, parent = path + (key,), parent, model.parent(parent)
    return path


def shown(path: Path) -> str:
    """``logs['loss']``, ``self.step``: a path as the script writes it."""
    return "".join(p if p.startswith("[") or i == 0 else "." + p for i, p in enumerate(path))


def path_of(node: ast.AST | None) -> Path | None:
    text = dotted(node) if node is not None else None
    if text is None and isinstance(node, ast.Subscript):
        base = path_of(node.value)
        key = key_part(node)
        return base + (key,) if base is not None and key is not None else base
    if (
        text is None
        and isinstance(node, ast.Call)
        and method_name(node) in PATH_OF_CALL
        and (r := receiver(node)) is not None
    ):
        return path_of(r)
    return tuple(text.split(".")) if text else None


def map_path(path: Path | None, mapping: dict[str, Path]) -> Path | None:
    if path is None:
        return None
    if path[0] in mapping:
        return mapping[path[0]] + path[1:]
    return path


def bind_parameters(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    call: ast.Call,
    mapping: dict[str, Path],
    outer: dict[str, Path] | None,
) -> dict[str, Path]:
    """``mapping`` (the receiver's parameter) plus each parameter given a path by ``call``,
    as the caller's frame (``outer``) names it."""
    params = [a.arg for a in fn.args.args]
    offset = 1 if mapping else 0  # ``self`` is the receiver
    given = [(params[i + offset], a) for i, a in enumerate(call.args) if i + offset < len(params)]
    given += [(k.arg, k.value) for k in call.keywords if k.arg in params]
    out = dict(mapping)
    for param, arg in given:
        path = map_path(path_of(arg), outer or {})
        if path is not None:
            out[param] = path
    return out


def arguments(call: ast.Call) -> Iterator[ast.expr]:
    for a in call.args:
        yield a.value if isinstance(a, ast.Starred) else a
    for k in call.keywords:
        yield k.value


def class_of(model: ScriptModel, node: ast.AST) -> ast.ClassDef | None:
    for a in model.ancestors(node):
        if isinstance(a, ast.ClassDef):
            return a
    return None


def method_of(
    model: ScriptModel, where: ast.AST, recv: ast.AST | None, name: str | None
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method ``self.name`` of the class around ``where`` (None: not shown here)."""
    if not (isinstance(recv, ast.Name) and recv.id == "self" and name):
        return None
    cls = where if isinstance(where, ast.ClassDef) else class_of(model, where)
    if cls is None:
        return None
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
            if any(dotted(d) == "property" for d in stmt.decorator_list):
                return None
            return stmt if stmt.args.args else None
    return None
