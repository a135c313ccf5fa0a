"""Where a value in a helper lives, given what its caller passed: for XLA401's reads in the
helpers a training loop calls (``rules/parts/helper_reads.py``).

``HostValues`` judges a name of the script by its bindings; a helper's parameters are out of
its reach, so any tensor read there looked like a device read. An augmentation helper reads
``.item()`` of padding computed from ``torch.eye(3, device=device)`` where ``device="cpu"`` is a
default its caller never passes: a CPU tensor, no sync. This follows a helper's values, with its
parameters bound to what the call gives (and the helpers it calls, with theirs), to one of:

- ``NUM``: a Python value (a number, a shape, ``None``, a dtype, a string);
- ``CPU``: a tensor on the host (a ``torch`` constructor with no device or ``device="cpu"``);
- ``DEV``: a tensor on the device (the loop's device tensor, ``.to(device)``, ``.cuda()``);
- ``UNK``: not known (a parameter the loop hands an unknown value, an attribute of ``self``).

A value is a set of these (the bindings that may reach it: either one), or a tuple of values
(``return img, G, (pad_x1, pad_x2)`` unpacked element by element). An op's result lives where
its tensor operands live (``DEV`` > ``UNK`` > ``CPU`` > ``NUM``: a device tensor times a
number is a device tensor); a tensor method's result where its receiver lives; a function
whose body is not here (a library's, ``upfirdn2d(img, k)``) computes where its arguments live.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from .calls import classes
from .model import ScriptModel, method_name, receiver
from .node_helpers import is_group_setting
from .reaching import _whole_names, binds_whole, bound_by_comprehension, walk_back
from .value_kinds import CPU, DEV, NUM, UNK, Value, combine, either, kinds, unpack
from .value_place_calls import MAX_DEPTH, SELF_NAMES, PlaceCalls

LOOPS = (ast.For, ast.AsyncFor, ast.While)
STORING = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})
DEVICE_STRINGS = ("cuda", "xla", "mps", "xpu", "npu", "tpu")
NUM_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "is_cuda", "requires_grad", "layout"})
NUM_BUILTINS = frozenset({"range", "len", "print", "int", "float", "bool", "str", "None"})


class Places(PlaceCalls):
    """Where values of ``model``'s functions live, per binding of their parameters."""

    def __init__(self, model: ScriptModel, default_device: bool = False) -> None:
        self.model = model
        self.default_device = default_device
        self._memo: dict[tuple, Value] = {}
        self._active: set[tuple] = set()

    # --- the questions ------------------------------------------------------------------
    def value(
        self, expr: ast.AST, fn: ast.AST | None, env: dict[str, Value], depth: int = 0
    ) -> Value:
        """Where ``expr``, in function ``fn`` (None: the module) with parameters ``env``, lives."""
        key = (expr, fn, tuple(sorted(env.items())), depth)
        known = self._memo.get(key)
        if known is None:
            if key in self._active or depth > MAX_DEPTH:
                return frozenset({UNK} if depth > MAX_DEPTH else {NUM})  # a cycle adds nothing
            self._active.add(key)
            try:
                known = self._memo[key] = self._value(expr, fn, env, depth)
            finally:
                self._active.discard(key)
        return known

    def bind(
        self,
        call: ast.Call,
        callee: ast.FunctionDef | ast.AsyncFunctionDef,
        args: Sequence[Value],
        keywords: dict[str, Value],
        bound_self: Value | None = None,
    ) -> dict[str, Value]:
        """The parameters of ``callee`` a call with these argument values binds (a parameter
        left out takes its default when the function runs: see ``_parameter``)."""
        a = callee.args
        positional = [p.arg for p in (*a.posonlyargs, *a.args)]
        env: dict[str, Value] = {}
        if bound_self is not None and positional:
            env[positional.pop(0)] = bound_self
        starred = any(isinstance(x, ast.Starred) for x in call.args)
        extra: list[Value] = []
        for i, v in enumerate(args):
            if i < len(positional) and not starred:
                env[positional[i]] = v
            else:
                extra.append(v)
        if a.vararg is not None:
            env[a.vararg.arg] = either(extra) if not starred else frozenset({UNK})
        names = {p.arg for p in (*a.args, *a.kwonlyargs)}
        rest: list[Value] = []
        for k, v in keywords.items():
            (env.__setitem__(k, v) if k in names else rest.append(v))
        if a.kwarg is not None:
            env[a.kwarg.arg] = either(rest)
        if starred or any(k.arg is None for k in call.keywords):
            for p in [*positional, *(p.arg for p in a.kwonlyargs)]:
                env.setdefault(p, frozenset({UNK}))  # ``f(*xs)``/``f(**kw)``: may be any
        return env

    def call_env(
        self, call: ast.Call, callee: ast.AST, fn: ast.AST | None, env: dict[str, Value], depth: int
    ) -> dict[str, Value]:
        """``bind`` for a call inside ``fn`` (with ``env``) of this model's ``callee``."""
        args = [
            self.value(x.value if isinstance(x, ast.Starred) else x, fn, env, depth)
            for x in call.args
        ]
        kws = {k.arg: self.value(k.value, fn, env, depth) for k in call.keywords if k.arg}
        func = call.func
        bound = None
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in SELF_NAMES
        ):
            bound = self.value(func.value, fn, env, depth)
        return self.bind(call, callee, args, kws, bound)  # type: ignore[arg-type]

    # --- expressions --------------------------------------------------------------------
    def _value(self, expr: ast.AST, fn: ast.AST | None, env: dict[str, Value], depth: int) -> Value:
        of = lambda e: self.value(e, fn, env, depth)  # noqa: E731
        if isinstance(expr, ast.Constant):
            text = expr.value if isinstance(expr.value, str) else None
            if text is not None and (text == "cpu" or text.startswith("cpu:")):
                return frozenset({CPU})
            if text is not None and text.startswith(DEVICE_STRINGS):
                return frozenset({DEV})
            return frozenset({NUM})
        if isinstance(expr, ast.Name):
            return self._name(expr, fn, env, depth)
        if isinstance(expr, ast.Tuple | ast.List):
            if any(isinstance(e, ast.Starred) for e in expr.elts):
                return either(of(e) for e in expr.elts)
            return tuple(of(e) for e in expr.elts)
        if isinstance(expr, ast.Starred | ast.NamedExpr | ast.Await):
            return of(expr.value)
        if isinstance(expr, ast.Dict):
            return either(of(v) for v in expr.values)
        if isinstance(expr, ast.Set):
            return either(of(e) for e in expr.elts)
        if isinstance(expr, ast.BinOp):
            return combine([of(expr.left), of(expr.right)])
        if isinstance(expr, ast.UnaryOp):
            return kinds(of(expr.operand))
        if isinstance(expr, ast.Compare):
            return combine(of(e) for e in [expr.left, *expr.comparators])
        if isinstance(expr, ast.BoolOp):
            return either(of(v) for v in expr.values)
        if isinstance(expr, ast.IfExp):
            return either([of(expr.body), of(expr.orelse)])
        if isinstance(expr, ast.JoinedStr | ast.Lambda):
            return frozenset({NUM})
        if is_group_setting(expr):
            return frozenset({NUM})
        if isinstance(expr, ast.Subscript):
            base = of(expr.value)
            index = expr.slice
            if (
                isinstance(base, tuple)
                and isinstance(index, ast.Constant)
                and isinstance(index.value, int)
            ):
                if -len(base) <= index.value < len(base):
                    return base[index.value]
            return kinds(base)
        if isinstance(expr, ast.Attribute):
            if self.model.qualname(expr) is not None or expr.attr in NUM_ATTRIBUTES:
                return frozenset({NUM})  # ``math.pi``, ``torch.float32``, ``t.shape``
            if isinstance(expr.value, ast.Name) and expr.value.id in SELF_NAMES:
                return frozenset({UNK})  # state of the object: not followed
            return kinds(of(expr.value))  # ``t.device``, ``t.grad``, ``t.T``
        if isinstance(expr, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            inner = dict(env)
            for gen in expr.generators:
                element = self._element(gen.iter, fn, inner, depth)
                for name in {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}:
                    inner[name] = unpack(gen.target, element, name) or frozenset({UNK})
            elt = expr.value if isinstance(expr, ast.DictComp) else expr.elt
            return kinds(self.value(elt, fn, inner, depth))
        if isinstance(expr, ast.Call):
            return self._call(expr, fn, env, depth)
        return frozenset({UNK})

    def _element(
        self, iterable: ast.expr, fn: ast.AST | None, env: dict[str, Value], depth: int
    ) -> Value:
        """What iterating ``iterable`` gives each pass (``enumerate``/``zip``/``.items()`` as
        tuples)."""
        of = lambda e: self.value(e, fn, env, depth)  # noqa: E731
        if isinstance(iterable, ast.Call):
            f = iterable.func
            builtin = isinstance(f, ast.Name) and self._builtin(f)
            if builtin and f.id == "enumerate" and iterable.args:  # type: ignore[union-attr]
                return (frozenset({NUM}), self._element(iterable.args[0], fn, env, depth))
            if builtin and f.id == "zip":  # type: ignore[union-attr]
                return tuple(self._element(a, fn, env, depth) for a in iterable.args)
            if builtin and f.id == "range":  # type: ignore[union-attr]
                return frozenset({NUM})
            if method_name(iterable) == "items":
                return (frozenset({NUM}), kinds(of(receiver(iterable))))  # type: ignore[arg-type]
        whole = of(iterable)
        return either(whole) if isinstance(whole, tuple) else whole

    def _builtin(self, name: ast.Name) -> bool:
        model = self.model
        return (
            model.qualname(name) is None
            and name.id not in model.functions
            and not model.assignments.get(name.id)
        )

    def _name(self, name: ast.Name, fn: ast.AST | None, env: dict[str, Value], depth: int) -> Value:
        ident = name.id
        if bound_by_comprehension(self.model, name):
            return env.get(ident, frozenset({UNK}))
        if fn is None:
            return self._global(ident)
        found: list[Value] = []
        reaching = self._reaching(name, fn)
        whole = [b for b in reaching if b[3] != "store"]
        for stmt, target, value, how in reaching:
            found.append(self._bound(stmt, target, value, how, ident, fn, env, depth))
        if not whole or not self._dominated(name):
            param = self._parameter(fn, ident, env)
            if param is not None:
                found.append(param)
            elif not whole:
                found.append(self._global(ident))
        return either(found)

    def _bound(self, stmt, target, value, how, ident, fn, env, depth) -> Value:  # type: ignore[no-untyped-def]
        if how == "assign":
            got = unpack(target, self.value(value, fn, env, depth), ident)
        elif how == "for":
            got = unpack(target, self._element(value, fn, env, depth), ident)
        elif how == "aug":
            got = combine([self.value(value, fn, env, depth)])
        elif how == "store":  # ``d[k] = v``, ``xs.append(v)``: ``v`` is in it now
            got = kinds(self.value(value, fn, env, depth))
        else:
            got = frozenset({NUM} if how == "num" else {UNK})
        return got if got is not None else frozenset({UNK})

    def _reaching(self, name: ast.Name, fn: ast.AST) -> list[tuple]:
        """The bindings of ``name`` in ``fn`` that may reach this use: those from the last
        assignment that always runs before it (``walk_back``) on, in source order; every one
        of the frame when none always runs."""
        every = self._bindings(fn).get(name.id, [])
        if not every:
            return []
        found = self._walk_back(name)
        if found is None or found[0] is None:
            return every
        start = (found[0].lineno, found[0].col_offset)
        use = (name.lineno, name.col_offset)
        loops = [a for a in self.model.ancestors(name) if isinstance(a, LOOPS)]

        def reaches(b: tuple) -> bool:
            at = (b[0].lineno, b[0].col_offset)
            if b[0] is found[0] or start < at < use:
                return True
            # After the use: only through a loop around both (its previous pass).
            return at > start and any(a in loops for a in self.model.ancestors(b[0]))

        return [b for b in every if reaches(b)]

    def _dominated(self, name: ast.Name) -> bool:
        found = self._walk_back(name)
        return found is not None and found[0] is not None

    def _walk_back(self, name: ast.Name) -> tuple[ast.stmt | None, list[ast.expr]] | None:
        cache = self.model.memo((Places._walk_back,), dict)
        if name not in cache:
            cache[name] = walk_back(self.model, name, name.id, lambda s: binds_whole(s, name.id))
        return cache[name]

    def _bindings(self, fn: ast.AST) -> dict[str, list[tuple]]:
        """name -> ``(statement, target, value, how)`` of every binding in ``fn``'s frame."""

        def build() -> dict[str, list[tuple]]:
            out: dict[str, list[tuple]] = {}

            def add(target: ast.AST, stmt: ast.AST, value: ast.AST | None, how: str) -> None:
                for ident in _whole_names(target):
                    out.setdefault(ident, []).append((stmt, target, value, how))
                # ``d[k] = v`` / ``obj.x = v`` stores ``v`` into ``d``: one more place its
                # contents may live (a tensor stays where it is, and then ``v`` is there too).
                for part in target.elts if isinstance(target, ast.Tuple | ast.List) else [target]:
                    base = _stored_into(part)
                    if base is not None and value is not None and how != "for":
                        out.setdefault(base, []).append((stmt, None, value, "store"))

            for n in self.model.walk_scope(fn):
                if isinstance(n, ast.Call) and method_name(n) in STORING:
                    base = receiver(n)
                    if isinstance(base, ast.Name):
                        for arg in n.args:
                            out.setdefault(base.id, []).append((n, None, arg, "store"))
                elif isinstance(n, ast.Assign):
                    for t in n.targets:
                        add(t, n, n.value, "assign")
                elif isinstance(n, ast.AnnAssign) and n.value is not None:
                    add(n.target, n, n.value, "assign")
                elif isinstance(n, ast.AugAssign):
                    add(n.target, n, n.value, "aug" if isinstance(n.target, ast.Name) else "store")
                elif isinstance(n, ast.NamedExpr):
                    add(n.target, n, n.value, "assign")
                elif isinstance(n, ast.For | ast.AsyncFor):
                    add(n.target, n, n.iter, "for")
                elif isinstance(n, ast.withitem) and n.optional_vars is not None:
                    add(n.optional_vars, n.context_expr, None, "unknown")
                elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    out.setdefault(n.name, []).append((n, None, None, "num"))
                elif isinstance(n, ast.Import | ast.ImportFrom):
                    for alias in n.names:
                        local = (alias.asname or alias.name).split(".")[0]
                        out.setdefault(local, []).append((n, None, None, "num"))
            for entries in out.values():  # statements without positions sort first
                entries.sort(
                    key=lambda b: (getattr(b[0], "lineno", 0), getattr(b[0], "col_offset", 0))
                )
            return out

        return self.model.memo((Places._bindings, fn), build)

    def _parameter(self, fn: ast.AST, ident: str, env: dict[str, Value]) -> Value | None:
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        a = fn.args
        params = [*a.posonlyargs, *a.args]
        defaults = dict(
            zip([p.arg for p in params[len(params) - len(a.defaults) :]], a.defaults, strict=True)
        )
        defaults.update(
            {p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None}
        )
        names = {p.arg for p in (*params, *a.kwonlyargs)} | {
            p.arg for p in (a.vararg, a.kwarg) if p
        }
        if ident not in names:
            return None
        if ident in env:
            return env[ident]
        if ident in defaults:  # not passed: the default, evaluated where the def is
            return self.value(defaults[ident], None, {})
        return frozenset({UNK})

    def _global(self, ident: str) -> Value:
        model = self.model
        if ident in model.imports or ident in model.functions or ident in classes(model):
            return frozenset({NUM})  # a module, a function, a class: not a tensor
        values = [
            a.value
            for a in model.assignments.get(ident, ())
            if a.value is not None and model.is_module_level(a)
        ]
        if values:
            # What functions store into a module's dict or list counts too (a cache of
            # tensors filled on first use), judged with their parameters unknown.
            stores = [
                kinds(self.value(value, fn, {}))
                for fn in self._storing_functions(ident)
                for _stmt, _target, value, how in self._bindings(fn).get(ident, ())
                if how == "store"
            ]
            return either([*(self.value(v, None, {}) for v in values), *stores])
        if model.assignments.get(ident) or ident in ("self", "cls"):
            return frozenset({UNK})
        return frozenset({NUM}) if ident in NUM_BUILTINS else frozenset({UNK})

    def _storing_functions(self, ident: str) -> list[ast.AST]:
        """The functions that store into the module's ``ident`` without binding it."""
        model = self.model
        out = []
        for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
            entries = self._bindings(fn).get(ident, ())
            if entries and all(how == "store" for *_, how in entries):
                out.append(fn)
        return out


def _stored_into(target: ast.AST) -> str | None:
    """``d`` of ``d[k]`` / ``d.x`` (``self`` excepted: its state is not followed)."""
    if not isinstance(target, ast.Subscript | ast.Attribute):
        return None
    while isinstance(target, ast.Subscript | ast.Attribute):
        target = target.value
    if isinstance(target, ast.Name) and target.id not in SELF_NAMES:
        return target.id
    return None
