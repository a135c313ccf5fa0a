"""A semantic view of one script, computed once per parse and shared by every rule.

It resolves import aliases (``from torch.cuda import amp`` makes ``amp.autocast`` mean
``torch.cuda.amp.autocast``), indexes calls by qualified name, finds the training loop
(the loop that runs ``backward()`` / an optimizer step, following calls into local step
functions), and converts stdlib ``ast`` positions (UTF-8 byte columns) to code points.
"""

from __future__ import annotations

import ast
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import TypeVar

# Re-exported: rules import the node helpers, the emitter and the loop types from here.
from .emitter import Emitter
from .node_helpers import (
    LOOP_TYPES,
    SCOPE_TYPES,
    arg_or_keyword,
    const_str,
    dotted,
    is_cuda_string,
    iter_names,
    keyword,
    method_name,
    node_order,
    optimizer_like,
    receiver,
    split_lines,
)
from .script_facts import OPTIMIZER_CLASSES, ScriptFacts
from .source_positions import SourcePositions
from .step_calls import StepCalls
from .training_loops import TrainingLoop
from .tree_index import child_nodes, index_tree

_CACHED_WALK_ROOTS = (*SCOPE_TYPES, ast.Module)
T = TypeVar("T")
_UNKNOWN = object()


def _position(node: ast.AST) -> int:
    """``node_order(node)`` as one int, in the same order (a column is under 2**31)."""
    return (node.lineno << 32) + node.col_offset  # type: ignore[attr-defined]


XLA_LOADERS = {
    "torch_xla.distributed.parallel_loader.MpDeviceLoader",
    "torch_xla.distributed.parallel_loader.ParallelLoader",
}
SYNC_CALLS = {"torch_xla.core.xla_model.mark_step", "torch_xla.sync", "torch_xla.step"}


def _never_silenced(code: str, first_line: int, last_line: int) -> bool:
    return False


class ScriptModel(SourcePositions, StepCalls, ScriptFacts):
    """Everything rules need to know about one parsed script: the index and name, structure
    and scope queries here; training steps in ``StepCalls``, script-wide facts in
    ``ScriptFacts``."""

    def __init__(self, source: str, tree: ast.Module, path: str = "<script>") -> None:
        self.source = source
        self.tree = tree
        self.path = path
        self.lines = split_lines(source)
        self.text_reads = []
        index = index_tree(tree)
        self.parents: dict[ast.AST, ast.AST] = index.parents
        self.calls: list[ast.Call] = index.calls
        self.loops: list[ast.For | ast.While | ast.AsyncFor] = index.loops
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = index.functions
        self.imports: dict[str, str] = index.imports
        if index.has_star_import:
            from .star_imports import star_import_names  # reads workspace modules

            self.imports = {**star_import_names(path, index.import_nodes), **index.imports}
        self.import_nodes: list[ast.Import | ast.ImportFrom] = index.import_nodes
        self.handed_modules: set[str] = index.handed_modules
        self.assignments: dict[str, list[ast.Assign | ast.AnnAssign]] = index.assignments
        self._by_type: dict[type, list[ast.AST]] = index.by_type
        # Each node's children (ast.iter_child_nodes order), kept from indexing so scope
        # walks do not re-read every node's fields.
        self._children: dict[ast.AST, list[ast.AST] | tuple[ast.AST, ...]] = index.children
        self._sorted_nodes: dict[tuple[type, ...], list[ast.AST]] = {}
        self._call_names: dict[int, str | None] = {}
        self._qualnames: dict[ast.AST, str | None] = {}
        self._step_calls: dict[int, bool] = {}
        self._enclosing_functions: dict[ast.AST, ast.AST | None] = {}
        self._assigned_values: dict[str, tuple[ast.expr, ...]] = {}
        self._calls_by_name: dict[str | None, list[ast.Call]] | None = None
        # Scope walks and derived facts asked for again and again by rules: computed once
        # per parse (the tree is never mutated after indexing).
        self._scope_walks: dict[ast.AST, tuple[ast.AST, ...]] = {}
        self._memo: dict[object, object] = {}
        # Whether the user silenced a rule's finding (code, first line, last line), set by the
        # engine from the settings and ignore comments: a rule whose fix is safe only because
        # another rule's fix is applied (XLA106's loader wrap after XLA101's device) must not
        # count on a fix the user turned off.
        self.silenced: Callable[[str, int, int], bool] = _never_silenced

    # --- indexing ----------------------------------------------------------------
    def nodes_of(self, *types: type[ast.AST]) -> list[ast.AST]:
        """Every node of these exact types, in source order. Rules use this instead of
        walking the whole tree again: one index pass serves all of them."""
        cached = self._sorted_nodes.get(types)
        if cached is None:
            nodes = [n for t in types for n in self._by_type.get(t, [])]
            try:  # node_order's order as one int: a tuple per node made the collector walk
                # the whole tree during the sort (2 s for the names of a 5 MB file)
                cached = sorted(nodes, key=_position)
            except AttributeError:  # a type without positions (ast.arguments, operators)
                cached = sorted(nodes, key=node_order)
            self._sorted_nodes[types] = cached
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
        # Several rules ask this of every attribute: resolve each node once per parse (keyed
        # by the node itself, which the table keeps alive, so no id is ever reused).
        known = self._qualnames.get(node, _UNKNOWN)
        if known is _UNKNOWN:
            known = self._qualnames[node] = self._resolve(node)
        return known  # type: ignore[return-value]

    def _resolve(self, node: ast.AST) -> str | None:
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
        """The calls to any of ``qualnames``, in source order (``self.calls``' order)."""
        by_name = self._calls_by_name
        if by_name is None:
            # Rules ask this once per site: index every call by its name once per parse
            # rather than scan all calls per question.
            by_name = self._calls_by_name = defaultdict(list)
            for call in self.calls:
                by_name[self.call_name(call)].append(call)
        return self._in_source_order([by_name[q] for q in set(qualnames) if q in by_name])

    def _in_source_order(self, lists: list[list[ast.Call]]) -> Iterator[ast.Call]:
        """The calls of several index lists (each in source order), merged in source order."""
        if len(lists) == 1:
            return iter(lists[0])
        if not lists:
            return iter(())
        order = self._call_order
        return iter(sorted((c for calls in lists for c in calls), key=lambda c: order[c]))

    @cached_property
    def _call_order(self) -> dict[ast.Call, int]:
        return {call: i for i, call in enumerate(self.calls)}

    def calls_to_prefix(self, prefix: str) -> Iterator[tuple[ast.Call, str]]:
        for call in self.calls:
            q = self.call_name(call)
            if q is not None and (q == prefix or q.startswith(prefix + ".")):
                yield call, q

    def method_calls(self, *names: str) -> Iterator[ast.Call]:
        """The calls of any of these methods (``x.to(...)``), in source order."""
        # Many rules ask this: index every call by its method name once per parse rather
        # than scan all calls per question.
        by_method = self.memo(ScriptModel.method_calls, self._calls_by_method)
        return self._in_source_order([by_method[n] for n in set(names) if n in by_method])

    def _calls_by_method(self) -> dict[str, list[ast.Call]]:
        by_method: dict[str, list[ast.Call]] = defaultdict(list)
        for call in self.calls:
            func = call.func
            if isinstance(func, ast.Attribute):
                by_method[func.attr].append(call)
        return dict(by_method)

    def local_alias(self, module: str) -> str | None:
        """The name this script already binds to ``module`` (``import a.b as X`` → X) where
        every line of the module sees it: an import at module level (in a ``try``/``if`` there
        too). One inside a function binds the name there only (held-out 56: ``import
        torch_xla.distributed.xla_backend`` in one function made a fix in another write
        ``torch_xla.device()``, a NameError); code a fix writes may go anywhere."""
        found = None
        visible = self._module_level_bindings()
        for local, target in self.imports.items():
            if target == module and local in visible:
                found = local
        return found

    def _module_level_bindings(self) -> frozenset[str]:
        def build() -> frozenset[str]:
            names: set[str] = set()
            for imp in self.import_nodes:
                if self.enclosing_function(imp) is not None or any(
                    isinstance(a, ast.ClassDef) for a in self.ancestors(imp)
                ):
                    continue
                for alias in imp.names:
                    if alias.asname:
                        names.add(alias.asname)
                    elif isinstance(imp, ast.Import):
                        names.add(alias.name.split(".")[0])
                    else:
                        names.add(alias.name)
            return frozenset(names)

        return self.memo(ScriptModel._module_level_bindings, build)

    def assigned_from(self, name: str) -> list[ast.expr]:
        # Asked per use of a name: each name's values are listed once per parse (a copy is
        # handed out, so a caller may change its list).
        values = self._assigned_values.get(name)
        if values is None:
            values = self._assigned_values[name] = tuple(
                a.value for a in self.assignments.get(name, ()) if a.value is not None
            )
        return list(values)

    def names_assigned_from_calls(self, qualnames: set[str]) -> set[str]:
        out = set()
        for name, assigns in self.assignments.items():
            for a in assigns:
                if isinstance(a.value, ast.Call) and self.call_name(a.value) in qualnames:
                    out.add(name)
        return out

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
        # Asked for every binding of a name per use of it (quadratic on big files): remember
        # the answer for the node and every ancestor passed on the way up.
        known = self._enclosing_functions
        try:
            return known[node]
        except KeyError:
            pass
        parents = self.parents
        path = [node]
        found = None
        p = parents.get(node)
        while p is not None:
            if isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef):
                found = p
                break
            cached = known.get(p, _UNKNOWN)
            if cached is not _UNKNOWN:
                found = cached
                break
            path.append(p)
            p = parents.get(p)
        for n in path:
            known[n] = found
        return found

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


__all__ = [
    "LOOP_TYPES",
    "OPTIMIZER_CLASSES",
    "SCOPE_TYPES",
    "SYNC_CALLS",
    "XLA_LOADERS",
    "Emitter",
    "ScriptModel",
    "TrainingLoop",
    "arg_or_keyword",
    "child_nodes",
    "const_str",
    "dotted",
    "is_cuda_string",
    "iter_names",
    "keyword",
    "method_name",
    "optimizer_like",
    "receiver",
    "split_lines",
]
