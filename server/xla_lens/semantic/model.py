"""A semantic view of one script, computed once per parse and shared by every rule.

It resolves import aliases (``from torch.cuda import amp`` makes ``amp.autocast`` mean
``torch.cuda.amp.autocast``), indexes calls by qualified name, finds the training loop
(the loop that runs ``backward()`` / an optimizer step, following calls into local step
functions), and converts stdlib ``ast`` positions (UTF-8 byte columns) to code points.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import TypeVar

from .edits import AddImport
from .span import Pos, Span
from .steps import ExternalStep, StepIndex, is_update_call

LOOP_TYPES = (ast.For, ast.While, ast.AsyncFor)
SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_CACHED_WALK_ROOTS = (*SCOPE_TYPES, ast.Module)
_NO_CHILDREN: tuple[()] = ()
T = TypeVar("T")
OPTIMIZER_CLASSES = {
    "torch.optim.SGD",
    "torch.optim.Adam",
    "torch.optim.AdamW",
    "torch.optim.RMSprop",
    "torch.optim.Adagrad",
    "torch.optim.Adadelta",
    "torch.optim.Adamax",
    "torch.optim.NAdam",
    "torch.optim.RAdam",
    "torch.optim.LBFGS",
    "torch_xla.amp.syncfree.SGD",
    "torch_xla.amp.syncfree.Adam",
    "torch_xla.amp.syncfree.AdamW",
}
XLA_LOADERS = {
    "torch_xla.distributed.parallel_loader.MpDeviceLoader",
    "torch_xla.distributed.parallel_loader.ParallelLoader",
}
SYNC_CALLS = {"torch_xla.core.xla_model.mark_step", "torch_xla.sync", "torch_xla.step"}


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(source: str) -> list[str]:
    """Lines (with their ends) as ``ast`` numbers them: only LF, CRLF and CR end a line.
    str.splitlines also breaks at form feed, vertical tab, U+001C..U+001E, NEL, U+2028 and
    U+2029, which may sit in comments and strings, and would shift every later line."""
    lines: list[str] = []
    start = 0
    for m in _LINE_BREAK.finditer(source):
        lines.append(source[start : m.end()])
        start = m.end()
    if start < len(source):
        lines.append(source[start:])
    return lines


def is_cuda_string(node: ast.AST) -> bool:
    """``"cuda"``, ``"cuda:0"`` or an f-string starting with ``cuda``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        v = node.value
        return v == "cuda" or (v.startswith("cuda:") and v[5:].isdigit())
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        return (
            isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and first.value.startswith("cuda")
        )
    return False


def const_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def arg_or_keyword(call: ast.Call, index: int, name: str) -> ast.expr | None:
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    if len(call.args) > index and not any(isinstance(a, ast.Starred) for a in call.args):
        return call.args[index]
    return None


def method_name(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def receiver(call: ast.Call) -> ast.expr | None:
    return call.func.value if isinstance(call.func, ast.Attribute) else None


def optimizer_like(name: str) -> bool:
    """``optimizer``, ``opt``, ``d_optimizer``, ``optimizer_G``, ``self.g_optim``..."""
    low = name.lower()
    return low in {"optim", "opt"} or "optimizer" in low or low.endswith(("_optim", "_opt"))


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


@dataclass
class TrainingLoop:
    node: ast.For | ast.While | ast.AsyncFor
    # Functions defined in this script that the loop calls and that run the step
    # (their bodies count as "inside the loop").
    step_functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=list)
    # Step functions of sibling modules the loop calls (their bodies are not in this file).
    external_steps: list[ExternalStep] = field(default_factory=list)

    def regions(self) -> list[ast.AST]:
        return [self.node, *self.step_functions]


class ScriptModel:
    """Everything rules need to know about one parsed script."""

    def __init__(self, source: str, tree: ast.Module, path: str = "<script>") -> None:
        self.source = source
        self.tree = tree
        self.path = path
        self.lines = split_lines(source)
        self.parents: dict[ast.AST, ast.AST] = {}
        self.calls: list[ast.Call] = []
        self.loops: list[ast.For | ast.While | ast.AsyncFor] = []
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.imports: dict[str, str] = {}
        self.import_nodes: list[ast.Import | ast.ImportFrom] = []
        self.assignments: dict[str, list[ast.Assign | ast.AnnAssign]] = defaultdict(list)
        self._by_type: dict[type, list[ast.AST]] = defaultdict(list)
        self._sorted_nodes: dict[tuple[type, ...], list[ast.AST]] = {}
        self._call_names: dict[int, str | None] = {}
        self._step_calls: dict[int, bool] = {}
        # Scope walks and derived facts asked for again and again by rules: computed once
        # per parse (the tree is never mutated after indexing).
        self._scope_walks: dict[ast.AST, tuple[ast.AST, ...]] = {}
        # Each node's children (ast.iter_child_nodes order), kept from indexing so scope
        # walks do not re-read every node's fields.
        self._children: dict[ast.AST, list[ast.AST] | tuple[()]] = {}
        self._memo: dict[object, object] = {}
        self._index()

    # --- indexing ----------------------------------------------------------------
    def _index(self) -> None:
        stack: list[ast.AST] = [self.tree]
        by_type, parents, kept = self._by_type, self.parents, self._children
        pop, push, set_parents = stack.pop, stack.extend, parents.update
        fields_of, kinds = _AST_FIELDS, _INDEXED_KINDS
        calls, loops, functions = self.calls, self.loops, self.functions
        import_nodes, assignments = self.import_nodes, self.assignments
        while stack:
            node = pop()
            cls = type(node)
            by_type[cls].append(node)
            fields = fields_of.get(cls)
            children = _child_nodes_of(node, node._fields if fields is None else fields)
            if children:
                kept[node] = children
                set_parents(dict.fromkeys(children, node))
                push(children)
            else:
                kept[node] = _NO_CHILDREN  # shared: leaves allocate nothing that lives on
            kind = kinds.get(cls)
            if kind is None:  # most nodes: names, attributes, constants, operators
                continue
            if kind == "call":
                calls.append(node)
            elif kind == "loop":
                loops.append(node)
            elif kind == "function":
                functions.setdefault(node.name, node)
            elif kind == "import":
                import_nodes.append(node)
            elif kind == "assign":
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        assignments[t.id].append(node)
            elif isinstance(node.target, ast.Name):  # "annassign"
                assignments[node.target.id].append(node)
        # Source order matters for "last import wins" and for stable output.
        self.calls.sort(key=_statement_order)
        self.loops.sort(key=_statement_order)
        self.import_nodes.sort(key=_statement_order)
        for imp in self.import_nodes:
            if isinstance(imp, ast.Import):
                for alias in imp.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        self.imports[root] = root
            elif imp.level == 0 and imp.module:
                for alias in imp.names:
                    if alias.name != "*":
                        self.imports[alias.asname or alias.name] = f"{imp.module}.{alias.name}"
        for names in self.assignments.values():
            names.sort(key=_statement_order)

    def nodes_of(self, *types: type[ast.AST]) -> list[ast.AST]:
        """Every node of these exact types, in source order. Rules use this instead of
        walking the whole tree again: one index pass serves all of them."""
        cached = self._sorted_nodes.get(types)
        if cached is None:
            nodes = [n for t in types for n in self._by_type.get(t, [])]
            cached = self._sorted_nodes[types] = sorted(nodes, key=_order)
        return cached

    def name_nodes(self, identifier: str) -> list[ast.Name]:
        """Every ``ast.Name`` spelled ``identifier``, in source order (indexed once per
        parse: rules that follow a variable ask this for each one)."""
        by_id = self.memo(ScriptModel.name_nodes, self._name_nodes_by_id)
        return by_id.get(identifier, [])

    def _name_nodes_by_id(self) -> dict[str, list[ast.Name]]:
        by_id: dict[str, list[ast.Name]] = defaultdict(list)
        for node in self.nodes_of(ast.Name):
            by_id[node.id].append(node)  # type: ignore[attr-defined]
        return dict(by_id)

    # --- names ---------------------------------------------------------------------
    def qualname(self, node: ast.AST) -> str | None:
        """Fully qualified name of a name/attribute chain rooted at an import."""
        name = dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        target = self.imports.get(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def call_name(self, call: ast.Call) -> str | None:
        # Every rule asks this of every call: resolve each call once per parse.
        key = id(call)
        try:
            return self._call_names[key]
        except KeyError:
            name = self._call_names[key] = self.qualname(call.func)
            return name

    def calls_to(self, *qualnames: str) -> Iterator[ast.Call]:
        wanted = set(qualnames)
        for call in self.calls:
            if self.call_name(call) in wanted:
                yield call

    def calls_to_prefix(self, prefix: str) -> Iterator[tuple[ast.Call, str]]:
        for call in self.calls:
            q = self.call_name(call)
            if q is not None and (q == prefix or q.startswith(prefix + ".")):
                yield call, q

    def method_calls(self, *names: str) -> Iterator[ast.Call]:
        wanted = set(names)
        for call in self.calls:
            if method_name(call) in wanted:
                yield call

    def local_alias(self, module: str) -> str | None:
        """The name this script already binds to ``module`` (``import a.b as X`` → X)."""
        found = None
        for local, target in self.imports.items():
            if target == module:
                found = local
        return found

    @cached_property
    def uses_torch_xla(self) -> bool:
        return any(t.split(".")[0] == "torch_xla" for t in self.imports.values())

    def assigned_from(self, name: str) -> list[ast.expr]:
        values = []
        for a in self.assignments.get(name, []):
            if a.value is not None:
                values.append(a.value)
        return values

    def names_assigned_from_calls(self, qualnames: set[str]) -> set[str]:
        out = set()
        for name, assigns in self.assignments.items():
            for a in assigns:
                if isinstance(a.value, ast.Call) and self.call_name(a.value) in qualnames:
                    out.add(name)
        return out

    @cached_property
    def optimizer_names(self) -> set[str]:
        names = self.names_assigned_from_calls(OPTIMIZER_CLASSES)
        # Optimizers built through a helper we cannot follow still show up by name.
        for name in self.assignments:
            if name in {"optimizer", "optim", "opt"} or name.endswith("_optimizer"):
                names.add(name)
        return names

    def is_optimizer(self, node: ast.AST | None) -> bool:
        if isinstance(node, ast.Name):
            # Also a parameter named like one (``def train(model, loader, optimizer)``).
            return node.id in self.optimizer_names or optimizer_like(node.id)
        if isinstance(node, ast.Attribute):
            return optimizer_like(node.attr)
        return False

    # --- structure -------------------------------------------------------------------
    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(node)

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        p = self.parents.get(node)
        while p is not None:
            yield p
            p = self.parents.get(p)

    def enclosing_statement(self, node: ast.AST) -> ast.stmt | None:
        cur: ast.AST | None = node
        while cur is not None and not isinstance(cur, ast.stmt):
            cur = self.parents.get(cur)
        return cur

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for a in self.ancestors(node):
            if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef):
                return a
        return None

    def innermost_loop(self, node: ast.AST) -> ast.For | ast.While | ast.AsyncFor | None:
        for a in self.ancestors(node):
            if isinstance(a, LOOP_TYPES):
                return a
            if isinstance(a, SCOPE_TYPES):
                return None
        return None

    def is_module_level(self, node: ast.AST) -> bool:
        return not any(isinstance(a, SCOPE_TYPES) for a in self.ancestors(node))

    def walk_scope(self, root: ast.AST) -> Iterator[ast.AST]:
        """Walk ``root`` without entering nested functions, lambdas or classes."""
        cached = self._scope_walks.get(root)
        if cached is None:
            if not isinstance(root, _CACHED_WALK_ROOTS):
                return self._walk_scope(root)
            # A function or the module: many rules walk the same scopes; walk each once.
            cached = self._scope_walks[root] = tuple(self._walk_scope(root))
        return iter(cached)

    def walk(self, root: ast.AST) -> Iterator[ast.AST]:
        """``ast.walk(root)`` (same nodes, same order) over the children kept from indexing."""
        children = self._children
        todo = deque([root])
        while todo:
            node = todo.popleft()
            kids = children.get(node)
            todo.extend(child_nodes(node) if kids is None else kids)
            yield node

    def _walk_scope(self, root: ast.AST) -> Iterator[ast.AST]:
        children = self._children
        stack = list(children.get(root) or child_nodes(root))
        while stack:
            node = stack.pop()
            yield node
            if not isinstance(node, SCOPE_TYPES):
                kids = children.get(node)
                stack.extend(child_nodes(node) if kids is None else kids)

    def memo(self, key: object, compute: Callable[[], T]) -> T:
        """``compute()`` once per parse for ``key``: a fact of the whole script that several
        rules (or one rule per finding) ask for."""
        try:
            return self._memo[key]  # type: ignore[return-value]
        except KeyError:
            value = self._memo[key] = compute()
            return value

    def _is_step_call(self, call: ast.Call) -> bool:
        # Asked of every call by the step classification and again by the loop search.
        key = id(call)
        try:
            return self._step_calls[key]
        except KeyError:
            found = self._step_calls[key] = self._classify_step_call(call)
            return found

    def _classify_step_call(self, call: ast.Call) -> bool:
        name = method_name(call)
        if name == "backward":
            return True
        if name == "step" and (
            self.is_optimizer(receiver(call)) or self._is_scaler(receiver(call))
        ):
            return True
        return self.call_name(call) == "torch_xla.core.xla_model.optimizer_step"

    def _is_scaler(self, node: ast.AST | None) -> bool:
        return isinstance(node, ast.Name) and node.id in self.scaler_names

    @cached_property
    def scaler_names(self) -> set[str]:
        return self.names_assigned_from_calls(
            {
                "torch.cuda.amp.GradScaler",
                "torch.amp.GradScaler",
                "torch.GradScaler",
                "torch_xla.amp.GradScaler",
                "torch.cuda.amp.grad_scaler.GradScaler",
            }
        )

    @cached_property
    def steps(self) -> StepIndex:
        return StepIndex(self)

    @cached_property
    def step_functions(self) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
        """Functions and methods of this script that run one training step per call."""
        return {fn.name: fn for fn in self.steps.step_functions}

    @cached_property
    def training_loops(self) -> list[TrainingLoop]:
        """Innermost loops that run a training step, in source order: the step is in the
        loop, in a step function or method it calls, or in a sibling module's step function.
        Loops that call an epoch function (which loops over the steps itself) are not."""
        steps = self.steps
        found: dict[ast.AST, TrainingLoop] = {}
        for call in self.calls:
            step_fn = None
            external = None
            if self._is_step_call(call):
                pass
            elif (step_fn := steps.step_callee(call)) is not None:
                pass
            elif (external := steps.external_step(call)) is None:
                continue
            loop = self.innermost_loop(call)
            if loop is None:
                continue
            entry = found.setdefault(loop, TrainingLoop(loop))
            if step_fn is not None and step_fn not in entry.step_functions:
                entry.step_functions.append(step_fn)
            if external is not None:
                entry.external_steps.append(external)
        for entry in found.values():
            # A step function that calls a deeper step function: include the callee too.
            entry.step_functions[:] = steps.callee_closure(entry.step_functions)
        for loop in list(found):
            if self._is_accumulation_loop(found[loop]):
                del found[loop]
        for loop in sorted(found, key=_order, reverse=True):
            outer = self._variant_loop_parent(loop)
            if outer is not None:
                # ``for dataset in ["CelebA", "RaFD"]:`` inside the step loop runs one step per
                # variant: the iteration, and its sync, is the enclosing loop's.
                inner = found.pop(loop)
                entry = found.setdefault(outer, TrainingLoop(outer))
                entry.step_functions.extend(
                    fn for fn in inner.step_functions if fn not in entry.step_functions
                )
                entry.external_steps.extend(inner.external_steps)
        return sorted(found.values(), key=lambda t: _order(t.node))

    def _variant_loop_parent(self, loop: ast.AST) -> ast.For | ast.While | ast.AsyncFor | None:
        """The enclosing loop of a loop over a literal sequence of constants, if any."""
        if not (
            isinstance(loop, ast.For)
            and isinstance(loop.iter, ast.List | ast.Tuple | ast.Set)
            and loop.iter.elts
            and all(isinstance(e, ast.Constant) for e in loop.iter.elts)
        ):
            return None
        return self.innermost_loop(loop)

    def _is_accumulation_loop(self, entry: TrainingLoop) -> bool:
        """A loop that only runs ``backward()`` while the code around it (the enclosing loop
        or function) updates the parameters: gradient accumulation within one step, whose
        step and sync belong to the code around it."""
        if entry.external_steps:
            return False
        for region in entry.regions():
            for n in self.walk_scope(region) if region is not entry.node else self.walk(region):
                if isinstance(n, ast.Call) and is_update_call(self, n):
                    return False
        scope: ast.AST = self.tree
        for a in self.ancestors(entry.node):
            if isinstance(a, SCOPE_TYPES):
                scope = a
                break
        inside = set(map(id, self.walk(entry.node)))
        return any(
            isinstance(n, ast.Call) and id(n) not in inside and is_update_call(self, n)
            for n in self.walk_scope(scope)
        )

    def in_training_loop(self, node: ast.AST) -> TrainingLoop | None:
        for loop in self.training_loops:
            for region in loop.regions():
                if node is region or any(a is region for a in self.ancestors(node)):
                    return loop
        return None

    def nodes_in_training_loops(self) -> Iterator[tuple[TrainingLoop, ast.AST]]:
        # Several rules walk every loop body: list the nodes once per parse.
        return iter(self.memo(ScriptModel.nodes_in_training_loops, self._loop_body_nodes))

    def _loop_body_nodes(self) -> list[tuple[TrainingLoop, ast.AST]]:
        return list(self._iter_loop_body_nodes())

    def _iter_loop_body_nodes(self) -> Iterator[tuple[TrainingLoop, ast.AST]]:
        seen: set[int] = set()
        for loop in self.training_loops:
            for region in loop.regions():
                body = region.body if isinstance(region, LOOP_TYPES) else region.body
                for stmt in body:
                    for n in [stmt, *self.walk_scope(stmt)]:
                        if id(n) not in seen:
                            seen.add(id(n))
                            yield loop, n

    # --- script-wide facts --------------------------------------------------------------
    @cached_property
    def is_distributed(self) -> bool:
        markers = {
            "torch.distributed.init_process_group",
            "torch.nn.parallel.DistributedDataParallel",
            "torch.utils.data.DistributedSampler",
            "torch.utils.data.distributed.DistributedSampler",
            "torch_xla.distributed.xla_multiprocessing.spawn",
            "torch_xla.launch",
            "torch.multiprocessing.spawn",
        }
        if any(self.call_name(c) in markers for c in self.calls):
            return True
        if "_mp_fn" in self.functions:
            return True
        return any(
            t.startswith("torch_xla.distributed.xla_multiprocessing") for t in self.imports.values()
        )

    @cached_property
    def uses_grad_scaler(self) -> bool:
        return bool(self.scaler_names)

    @cached_property
    def uses_amp(self) -> bool:
        amp_calls = {
            "torch.cuda.amp.autocast",
            "torch.autocast",
            "torch.amp.autocast",
            "torch_xla.amp.autocast",
            "torch.cpu.amp.autocast",
        }
        return self.uses_grad_scaler or any(self.call_name(c) in amp_calls for c in self.calls)

    @cached_property
    def uses_trainer(self) -> bool:
        return any(
            (self.call_name(c) or "").startswith("transformers.")
            and (self.call_name(c) or "").endswith(("Trainer", "TrainingArguments"))
            for c in self.calls
        )

    @cached_property
    def device_variable(self) -> str | None:
        """The name the script keeps its device in (``device = ...``), if any."""
        for name in ("device", "dev", "xla_device"):
            if name in self.assignments:
                return name
        for name, assigns in self.assignments.items():
            for a in assigns:
                if isinstance(a.value, ast.Call) and self.call_name(a.value) in {
                    "torch.device",
                    "torch_xla.core.xla_model.xla_device",
                    "torch_xla.device",
                }:
                    return name
        return None

    # --- positions ------------------------------------------------------------------------
    def _col(self, lineno: int, byte_col: int) -> int:
        if lineno - 1 >= len(self.lines):
            return byte_col
        line = self.lines[lineno - 1]
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> Span:
        end_line = getattr(node, "end_lineno", None) or node.lineno
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = node.col_offset
        return Span(
            Pos(node.lineno - 1, self._col(node.lineno, node.col_offset)),
            Pos(end_line - 1, self._col(end_line, end_col)),
        )

    def segment(self, node: ast.AST) -> str:
        # ast.get_source_segment re-splits the whole source on every call (quadratic on
        # big scripts); self.lines is the same split, done once.
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_line is None or end_col is None or end_line > len(self.lines):
            return ast.unparse(node)
        first, last = node.lineno - 1, end_line - 1
        if first == last:
            text = self.lines[first].encode()[node.col_offset : end_col].decode()
        else:
            text = (
                self.lines[first].encode()[node.col_offset :].decode()
                + "".join(self.lines[first + 1 : last])
                + self.lines[last].encode()[:end_col].decode()
            )
        return text or ast.unparse(node)

    def line_text(self, line0: int) -> str:
        return self.lines[line0].rstrip("\r\n") if 0 <= line0 < len(self.lines) else ""

    def in_indented_block(self, stmt: ast.stmt) -> bool:
        """False for a statement of a one-line suite (``if c: stmt``, ``for x in y: stmt``).

        The engine inserts and appends statements only in indented blocks and at module
        level, so statement fixes anchored in a one-line suite would be dropped.
        """
        parent = self.parents.get(stmt)
        if parent is None or isinstance(parent, ast.Module):
            return True
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and stmt in block:
                first = next(s for s in block if s.lineno == stmt.lineno)
                col = self._col(first.lineno, first.col_offset)
                return not self.line_text(first.lineno - 1)[:col].strip()
        return True


class Emitter:
    """Builds replacement code and records the imports it needs, reusing the script's
    own aliases (``import torch_xla.core.xla_model as X`` makes the fix write ``X.``)."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self.imports: list[AddImport] = []

    def module(self, qualname: str, default_alias: str | None = None) -> str:
        existing = self.model.local_alias(qualname)
        if existing is not None:
            return existing
        if default_alias and default_alias != qualname:
            stmt = f"import {qualname} as {default_alias}"
            name = default_alias
        else:
            stmt = f"import {qualname}"
            name = qualname
        self._add(AddImport(stmt))
        return name

    def name_from(self, module: str, name: str) -> str:
        """``from module import name``, unless the name is taken by something else."""
        full = f"{module}.{name}"
        bound = self.model.imports.get(name)
        if bound == full:
            return name
        if bound is not None or name in self.model.functions or name in self.model.assignments:
            return f"{self.module(module)}.{name}"
        self._add(AddImport(f"from {module} import {name}"))
        return name

    def _add(self, op: AddImport) -> None:
        if op not in self.imports:
            self.imports.append(op)

    # Common torch_xla modules under their conventional names.
    @property
    def xm(self) -> str:
        return self.module("torch_xla.core.xla_model", "xm")

    @property
    def xr(self) -> str:
        return self.module("torch_xla.runtime", "xr")

    @property
    def pl(self) -> str:
        return self.module("torch_xla.distributed.parallel_loader", "pl")

    @property
    def torch_xla(self) -> str:
        return self.module("torch_xla")

    @property
    def torch(self) -> str:
        return self.module("torch")


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, without its generator overhead (hot path)."""
    fields = _AST_FIELDS.get(type(node))
    return _child_nodes_of(node, node._fields if fields is None else fields)


def _child_nodes_of(node: ast.AST, fields: tuple[str, ...]) -> list[ast.AST]:
    out: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend([item for item in value if isinstance(item, ast.AST)])
    return out


# ASDL field types that never hold a node (``Name(identifier id, expr_context ctx)``).
_LEAF_FIELD_TYPES = frozenset({"identifier", "string", "constant", "int"})


def _node_fields(cls: type[ast.AST]) -> tuple[str, ...] | None:
    """The fields of ``cls`` that may hold nodes, read from its ASDL signature (the class
    docstring); None (look at every field) when the signature does not match ``_fields``."""
    doc = (cls.__doc__ or "").split("\n")[0]
    if not cls._fields:
        return ()
    m = re.fullmatch(rf"{cls.__name__}\((.*)\)", doc.strip())
    if m is None:
        return None
    declared = [part.strip().split() for part in m.group(1).split(",")]
    if [d[-1] for d in declared if d] != list(cls._fields) or any(len(d) != 2 for d in declared):
        return None
    return tuple(name for kind, name in declared if kind.rstrip("*?") not in _LEAF_FIELD_TYPES)


def _all_node_classes() -> list[type[ast.AST]]:
    out, todo = [], [ast.AST]
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


# Only the fields that can hold child nodes, per concrete node class: indexing skips
# identifiers, strings and numbers without reading them (a third of all fields).
_AST_FIELDS: dict[type, tuple[str, ...]] = {
    cls: fields
    for cls in _all_node_classes()
    if cls.__module__ == "ast" and (fields := _node_fields(cls)) is not None
}
# What indexing records for a node, by its exact class (a dict lookup, not an isinstance
# chain, for the many nodes that are none of these).
_INDEXED_KINDS: dict[type, str] = {
    ast.Call: "call",
    ast.For: "loop",
    ast.While: "loop",
    ast.AsyncFor: "loop",
    ast.FunctionDef: "function",
    ast.AsyncFunctionDef: "function",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.Assign: "assign",
    ast.AnnAssign: "annassign",
}
_statement_order = attrgetter("lineno", "col_offset")


def _order(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def iter_names(node: ast.AST) -> Iterable[str]:
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            yield n.id
