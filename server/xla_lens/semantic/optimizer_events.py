"""The builds and moves of modules that ``ordering.py`` puts in order.

Per scope (module, function, method):
- a *build*: an optimizer constructed from ``path.parameters()`` (directly, through a local
  variable, through a local helper that takes the model, or a local helper that returns the
  model together with the optimizer it built);
- a *move*: ``path.to(device)`` / ``path.cuda()`` (or a local helper/class that moves the
  model it is given).

Which events pair up, and which move runs after which build, is ``ordering.py``'s question;
this module only finds the events, so a subclass (``accelerate_prepare.PrepareOrdering``) can
add its own kinds of build and move.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from .cpu_targets import NOT_DEVICES, names_the_cpu
from .model import SCOPE_TYPES, ScriptModel, dotted, method_name, receiver
from .optimizer_escape import outlives_its_function
from .parameter_lists import parameter_list_owner

PARAMETER_METHODS = {"parameters", "named_parameters"}
# Qualified-name markers of optimizer classes: torch.optim.X, torch_xla.amp.syncfree.X,
# bitsandbytes.optim.X, apex.optimizers.X, transformers.AdamW / Adafactor.
OPTIMIZER_MODULES = (
    "torch.optim.",
    "torch_xla.amp.syncfree.",
    "bitsandbytes.optim.",
    "apex.optimizers.",
)
OPTIMIZER_NAMES = {
    "transformers.AdamW",
    "transformers.Adafactor",
    "transformers.optimization.AdamW",
}
NOT_OPTIMIZERS = {"Optimizer"}


@dataclass(frozen=True)
class Event:
    node: ast.AST  # the call (or call statement) that builds or moves
    stmt: ast.stmt  # the statement of the scope that runs it
    scope: ast.AST  # function, lambda/class body, or the module
    path: str  # dotted module path: "model", "self.net"
    via: str = ""  # name of the local helper it goes through, if any
    holder: str = ""  # the module container the event is on, when ``path`` is a member of it
    elsewhere: str = ""  # "simclr.py:19": the move runs in another file of the workspace
    # An earlier statement that took the Parameters into a list the optimizer is given
    # (``trainable = list(model.parameters())``): the build's moment for the ordering.
    taken: ast.stmt | None = None


def _is_optimizer_class(model: ScriptModel, call: ast.Call) -> bool:
    q = model.call_name(call)
    if q is None and _handed_optimizer_module(model, call):
        return True
    if q is None:
        # ``get_hfta_optim_for(optim.Adam, B=B)(model.parameters(), lr=...)`` (held-out 53's
        # hfta): a factory handed an optimizer class returns that class (or a subclass),
        # called here with the parameters.
        inner = call.func
        return (
            isinstance(inner, ast.Call)
            and bool(inner.args)
            and isinstance(inner.args[0], ast.Name | ast.Attribute)
            and _names_optimizer_class(model, inner.args[0])
            and bool(call.args)
        )
    last = q.rpartition(".")[2]
    last = q.rpartition(".")[2]
    if not last[:1].isupper() or last in NOT_OPTIMIZERS or "lr_scheduler" in q:
        return False
    return q.startswith(OPTIMIZER_MODULES) or q in OPTIMIZER_NAMES


def _handed_optimizer_module(model: ScriptModel, call: ast.Call) -> bool:
    """``self._initialize('optimizer', torch.optim, model.parameters())`` (held-out 152's
    DBNet trainer, whose helper returns ``getattr(module, config_type)(*args)``): a factory
    handed the optimizer module and the parameters builds one of the module's optimizers."""
    modules = {m.rstrip(".") for m in OPTIMIZER_MODULES}
    handed = any(
        isinstance(a, ast.Name | ast.Attribute) and model.qualname(a) in modules for a in call.args
    )
    return handed and any(
        isinstance(a, ast.Call) and _gives_parameters(method_name(a)) for a in call.args
    )


def _names_optimizer_class(model: ScriptModel, node: ast.expr) -> bool:
    q = model.qualname(node)
    if q is None:
        return False
    last = q.rpartition(".")[2]
    if not last[:1].isupper() or last in NOT_OPTIMIZERS or "lr_scheduler" in q:
        return False
    return q.startswith(OPTIMIZER_MODULES) or q in OPTIMIZER_NAMES


# Factories that build whatever class a config names (hydra's ``_target_``).
CONFIG_FACTORIES = frozenset({"hydra.utils.instantiate", "hydra.utils.call"})


def _is_configured_optimizer(model: ScriptModel, call: ast.Call) -> bool:
    """``hydra.utils.instantiate(cfg.optimizer, params=self.model.parameters())``
    (diffusion_policy's workspaces, held-out 37): an optimizer class named by the config,
    built with the model's parameters as torch's optimizers take them (``params=``), where the
    config entry says it is an optimizer."""
    if model.call_name(call) not in CONFIG_FACTORIES or not call.args:
        return False
    params = next((k.value for k in call.keywords if k.arg == "params"), None)
    if params is None or not any(
        isinstance(n, ast.Call) and _gives_parameters(method_name(n)) for n in ast.walk(params)
    ):
        return False
    return "optim" in (dotted(call.args[0]) or "").lower()


def path_root(path: str) -> str:
    """``model`` of ``model.fc``: paths that match share it."""
    return path.split(".", 1)[0]


class OptimizerEvents:
    """The optimizer builds and device moves of one script, with the scope each runs in."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self._assignments_by_scope: dict[str, dict[ast.AST, list[ast.AST]]] = {}
        self._event_groups: dict[int, tuple[list[Event], dict[int, list[Event]]]] = {}

    # --- scopes -------------------------------------------------------------------------
    def scope_of(self, node: ast.AST) -> ast.AST:
        for a in self.model.ancestors(node):
            if isinstance(a, SCOPE_TYPES):
                return a
        return self.model.tree

    def statement_in_scope(self, node: ast.AST) -> ast.stmt | None:
        """The statement directly in ``node``'s scope body chain that runs it (the
        outermost statement below the scope: ``for``/``if`` blocks count as one)."""
        stmt = self.model.enclosing_statement(node)
        return stmt

    # --- parameter sources ------------------------------------------------------------------
    def _param_paths(self, expr: ast.AST, scope: ast.AST, depth: int = 0) -> set[str]:
        out: set[str] = set()
        for n in self.model.walk(expr):
            if isinstance(n, ast.Call) and _gives_parameters(method_name(n)):
                path = dotted(receiver(n)) if receiver(n) is not None else None
                if path is not None:
                    out.add(path)
            elif isinstance(n, ast.Call) and (path := _parameter_getter_argument(n)):
                out.add(path)
            elif isinstance(n, ast.Call) and (path := parameter_list_owner(self.model, n)):
                out.add(path)  # ``model.get_optim_policies()``: TSM's parameter groups
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and depth < 2:
                for a in self._assignments_in(n.id, scope):
                    if a.value is not None and a.lineno < n.lineno:
                        out |= self._param_paths(a.value, scope, depth + 1)
        return out

    def _assignments_in(self, name: str, scope: ast.AST) -> list[ast.AST]:
        """``name``'s assignments whose frame is ``scope``, in the model's order: a big
        script assigns ``model`` in every copy, and each read asked about all of them."""
        by_scope = self._assignments_by_scope.get(name)
        if by_scope is None:
            by_scope = self._assignments_by_scope[name] = {}
            for a in self.model.assignments.get(name, []):
                by_scope.setdefault(self.scope_of(a), []).append(a)
        return by_scope.get(scope, [])

    # --- local helpers --------------------------------------------------------------------------
    @cached_property
    def _functions(self) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
        return {
            n.name: n
            for n in self.model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and isinstance(self.model.parent(n), ast.Module)
        }

    @cached_property
    def _classes(self) -> dict[str, ast.ClassDef]:
        return {
            n.name: n
            for n in self.model.nodes_of(ast.ClassDef)
            if isinstance(n, ast.ClassDef) and isinstance(self.model.parent(n), ast.Module)
        }

    @staticmethod
    def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
        return [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]

    @cached_property
    def _direct_builds(self) -> list[Event]:
        out = []
        for call in self.model.calls:
            if _is_optimizer_class(self.model, call) or _is_configured_optimizer(self.model, call):
                out.extend(self.build_events(call))
        return out

    def build_events(self, call: ast.Call) -> list[Event]:
        """One event per parameter path the optimizer built by ``call`` reads (and per
        ``self.`` alias of it in ``__init__``)."""
        scope = self.scope_of(call)
        stmt = self.model.enclosing_statement(call)
        if stmt is None:
            return []
        taken = self._captured_at(call, scope)
        out = []
        for path in sorted(self._param_paths(call, scope)):
            out.append(Event(call, stmt, scope, path, taken=taken))
            out.extend(
                Event(call, stmt, scope, alias, taken=taken)
                for alias in self._self_aliases(scope, path)
            )
        return out

    def _captured_at(self, call: ast.Call, scope: ast.AST) -> ast.stmt | None:
        """The statement that took the Parameters the optimizer is given, when it is an
        earlier one holding them in a list (``trainable = list(filter(..., unet.parameters()))``
        then ``AdamW(trainable)``; held-out 43, AnimateDiff): a move between the two leaves
        that list with the old Parameters. A generator (``params = model.parameters()``) is
        read only when the optimizer iterates it, so the optimizer's own statement counts."""
        kw = next((k.value for k in call.keywords if k.arg == "params"), None)
        given = call.args[0] if call.args else kw
        if not isinstance(given, ast.Name):
            return None
        earlier = [a for a in self._assignments_in(given.id, scope) if a.lineno < call.lineno]
        if not earlier or earlier[-1].value is None:
            return None
        value = earlier[-1].value
        listed = isinstance(value, ast.Call) and parameter_list_owner(self.model, value)
        if not ((_materialized(value) or listed) and self._param_paths(value, scope)):
            return None
        return self.statement_in_scope(earlier[-1])

    def _self_aliases(self, scope: ast.AST, path: str) -> list[str]:
        """In ``__init__(self, model)``, ``self.model = model`` makes ``self.model`` the
        same module as the parameter ``model``."""
        if not (isinstance(scope, ast.FunctionDef) and scope.name == "__init__"):
            return []
        root, _, rest = path.partition(".")
        out = []
        for n in self.model.walk(scope):
            if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
                continue
            pairs = [(n.targets[0], n.value)]
            target, value = pairs[0]
            # ``self.model, self.optimizer = model, optimizer`` (deeplab-xception, held-out 29)
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                if len(target.elts) == len(value.elts):
                    pairs = list(zip(target.elts, value.elts, strict=True))
            for t, v in pairs:
                if (
                    isinstance(v, ast.Name)
                    and v.id == root
                    and (dotted(t) or "").startswith("self.")
                ):
                    out.append(dotted(t) + (f".{rest}" if rest else ""))  # type: ignore[operator]
        return out

    @cached_property
    def _direct_moves(self) -> list[Event]:
        out = []
        for call in self.model.calls:
            if not self._is_device_move(call):
                continue
            path = dotted(self._moved(call))  # type: ignore[arg-type]
            stmt = self.model.enclosing_statement(call)
            if path is None or stmt is None:
                continue
            out.append(Event(call, stmt, self.scope_of(call), path))
        return out

    def _moved(self, call: ast.Call) -> ast.expr | None:
        """What a move moves: its receiver, or the module a wrapper around it holds
        (``nn.DataParallel(net).cuda()`` moves ``net``: augmix's cifar.py, held-out 29)."""
        recv = receiver(call)
        if (
            isinstance(recv, ast.Call)
            and (self.model.call_name(recv) or "") in WRAPPERS
            and recv.args
        ):
            return recv.args[0]
        if isinstance(recv, ast.Call) and dotted(recv) is None:
            # ``GaussianDiffusionTrainer(net_model, ...).to(device)`` keeps ``net_model`` as
            # a submodule: the move moves it (pytorch-ddpm, held-out 118).
            from .holding_constructors import held_modules  # noqa: PLC0415 (reads other files)

            held = held_modules(self.model, recv)
            if held:
                return held[0]
        return recv

    def _is_device_move(self, call: ast.Call) -> bool:
        moved = self._moved(call)
        if moved is None or dotted(moved) is None:
            return False
        return moves_to_a_device(self.model, call)

    def _helper_param_events(
        self, events: list[Event], fn: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> set[int]:
        """Positions of ``fn``'s parameters that ``events`` (builds or moves) use."""
        params = self._params(fn)
        used = set()
        for e in self._events_by_scope(events).get(id(fn), ()):
            if path_root(e.path) in params:
                used.add(params.index(path_root(e.path)))
        return used

    def _events_by_scope(self, events: list[Event]) -> dict[int, list[Event]]:
        """``events`` grouped by the id of their scope, in order (once per list: each
        function asked about every event of a big script, quadratic)."""
        cached = self._event_groups.get(id(events))
        if cached is not None and cached[0] is events:
            return cached[1]
        groups: dict[int, list[Event]] = {}
        for e in events:
            groups.setdefault(id(e.scope), []).append(e)
        self._event_groups[id(events)] = (events, groups)
        return groups

    def _calls_to_helpers(self, events: list[Event], kind: str) -> list[Event]:
        """Builds/moves that happen inside a local helper, seen from its callers. A build
        counts only when the optimizer outlives the call (returned, stored, handed on): one
        the helper builds, steps and drops cannot go stale by a later move of its caller
        (leimao's QAT ``train_model`` moves, builds and trains; the caller's later
        ``model.to(cpu_device)`` then prepares the model for int8 conversion, held-out 129)."""
        out = []
        if kind == "build":
            events = [e for e in events if outlives_its_function(e.node, e.scope)]
        targets: dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, int]] = {}
        for name, fn in self._functions.items():
            used = self._helper_param_events(events, fn)
            if used:
                targets[name] = (fn, 0)
        for name, cls in self._classes.items():
            init = next(
                (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"),
                None,
            )
            if init is not None and self._helper_param_events(events, init):
                targets[name] = (init, 1)  # skip ``self``
        if not targets:
            return out
        for call in self.model.calls:
            if not isinstance(call.func, ast.Name) or call.func.id not in targets:
                continue
            fn, skip = targets[call.func.id]
            params = self._params(fn)
            used = self._helper_param_events(events, fn)
            stmt = self.model.enclosing_statement(call)
            if stmt is None:
                continue
            for index in used:
                arg: ast.expr | None = None
                pos = index - skip
                if 0 <= pos < len(call.args) and not isinstance(call.args[pos], ast.Starred):
                    arg = call.args[pos]
                for kw in call.keywords:
                    if kw.arg == params[index]:
                        arg = kw.value
                path = dotted(arg) if arg is not None else None
                if path is not None:
                    out.append(Event(call, stmt, self.scope_of(call), path, via=call.func.id))
        return out

    def _returned_builds(self) -> list[Event]:
        """``model, opt = build(...)`` where ``build`` made ``opt`` from ``model``'s
        parameters and returns both: a build of the caller's ``model``."""
        out = []
        # Each function's builds and each name's calls, grouped once: a scan of every build
        # and every call per function grew with the file times its functions.
        built_in: dict[int, set[str]] = {}
        for e in self._direct_builds:
            built_in.setdefault(id(e.scope), set()).add(path_root(e.path))
        calls_by_name: dict[str, list[ast.Call]] | None = None
        for name, fn in self._functions.items():
            built = built_in.get(id(fn))
            if not built:
                continue
            positions = set()
            for n in self.model.walk(fn):
                if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple):
                    for i, elt in enumerate(n.value.elts):
                        if isinstance(elt, ast.Name) and elt.id in built:
                            positions.add(i)
            if not positions:
                continue
            if calls_by_name is None:
                calls_by_name = {}
                for c in self.model.calls:
                    if isinstance(c.func, ast.Name):
                        calls_by_name.setdefault(c.func.id, []).append(c)
            for call in calls_by_name.get(name, ()):
                stmt = self.model.parent(call)
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                    continue
                target = stmt.targets[0]
                if not isinstance(target, ast.Tuple):
                    continue
                for i in positions:
                    if i < len(target.elts) and dotted(target.elts[i]) is not None:
                        path = dotted(target.elts[i])
                        out.append(Event(call, stmt, self.scope_of(call), path, via=name))  # type: ignore[arg-type]
        return out

    @cached_property
    def builds(self) -> list[Event]:
        direct = self._direct_builds
        found = [*direct, *self._calls_to_helpers(direct, "build"), *self._returned_builds()]
        found += self._helper_builds({(id(e.node), e.path) for e in found})
        return found + self._member_events(found)

    def _helper_builds(self, known: set[tuple[int, str]]) -> list[Event]:
        """Calls of functions (this file's or a workspace module's) that return an optimizer
        built from the module the call hands them: ``get_optimizer(model.model, ...)``."""
        from .helper_optimizers import helper_builds  # noqa: PLC0415 (reads other files)

        out = []
        for call, handed, _where in helper_builds(self.model):
            path = dotted(handed)
            stmt = self.model.enclosing_statement(call)
            if path is None or stmt is None or (id(call), path) in known:
                continue
            known.add((id(call), path))
            via = dotted(call.func) or ""
            out.append(Event(call, stmt, self.scope_of(call), path, via=via))
        return out

    @cached_property
    def moves(self) -> list[Event]:
        direct = self._direct_moves
        found = [*direct, *self._calls_to_helpers(direct, "move"), *self._workspace_moves()]
        return found + self._member_events(found)

    def _workspace_moves(self) -> list[Event]:
        """A class of another file whose ``__init__`` moves the module the call hands it."""
        from .holder_moves import holder_moves  # noqa: PLC0415 (reads other files)
        from .workspace_moves import foreign_moves  # reads other files: only when asked

        out = []
        for found in [*foreign_moves(self.model), *holder_moves(self.model)]:
            stmt = self.model.enclosing_statement(found.call)
            path = dotted(found.moved)
            if stmt is None or path is None:
                continue
            via = dotted(found.call.func) or ""
            scope = self.scope_of(found.call)
            out.append(Event(found.call, stmt, scope, path, via=via, elsewhere=found.where))
        return out

    def _member_events(self, events: list[Event]) -> list[Event]:
        """An event on a module container (``trainable_list = nn.ModuleList([])`` then
        ``trainable_list.append(model_s)``) is one on each of its members too: RepDistiller
        builds its optimizer from one ModuleList and moves another holding the same student
        (held-out 27)."""
        out = []
        for e in events:
            for member in container_members(self.model, e.scope, e.path):
                out.append(Event(e.node, e.stmt, e.scope, member, via=e.via, holder=e.path))
        return out


def moves_to_a_device(model: ScriptModel, call: ast.Call) -> bool:
    """``x.cuda()`` / ``x.to(device)``: a move to a device, not a dtype or memory-format cast
    (``.to(torch.float16)``, ``.to(dtype)``) nor a move to the CPU or meta."""
    return is_device_move(call, model.qualname) and not names_the_cpu(model, call)


def is_device_move(call: ast.Call, qualname: Callable[[ast.AST], str | None] = dotted) -> bool:
    """``moves_to_a_device`` with names resolved by ``qualname`` (by their text alone for a
    module of another file, whose imports are not bound)."""
    name = method_name(call)
    if name == "cuda":
        return True
    if name != "to":
        return False
    target = call.args[0] if call.args else None
    for kw in call.keywords:
        if kw.arg == "device":
            target = kw.value
    if target is None or isinstance(target, ast.Starred):
        return False
    if isinstance(target, ast.Constant):
        return isinstance(target.value, str) and target.value.split(":")[0] not in NOT_DEVICES
    q = qualname(target) or ""
    if q.startswith("torch.") and q.rpartition(".")[2] not in {"device"}:
        # torch.float16, torch.bfloat16, torch.channels_last: not a device.
        return False
    ident = (dotted(target) or "").rpartition(".")[2].lower()
    return not any(k in ident for k in ("dtype", "precision", "format"))


MATERIALIZING = frozenset({"list", "tuple", "sorted", "set"})


def _materialized(value: ast.AST) -> bool:
    """A value that holds the Parameters themselves, not a generator over the module."""
    if isinstance(value, ast.List | ast.Tuple | ast.ListComp | ast.SetComp | ast.Dict):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in MATERIALIZING
    )


def _gives_parameters(name: str | None) -> bool:
    """``parameters()``, ``named_parameters()``, or a module's own getter of parameter groups
    (``get_1x_lr_params()``, ``backbone_params()``: deeplab-xception, held-out 29)."""
    return name is not None and (
        name in PARAMETER_METHODS or name.endswith(("_params", "_parameters"))
    )


def _parameter_getter_argument(call: ast.Call) -> str | None:
    """``net.model`` of ``get_parameters_conv(net.model, 'weight')``: a function named for
    parameters, handed a module first, inside an optimizer's arguments (held-out 57's pose
    trainer builds its parameter groups so, from a module beside it)."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        name = func.attr  # ``utils.get_params(net)``, not a method of the module itself
    if name is None or "param" not in name.lower() or not call.args:
        return None
    return dotted(call.args[0])


CONTAINERS = ("ModuleList", "Sequential", "ModuleDict")
# Wrappers whose ``.cuda()`` / ``.to()`` moves the module they hold.
WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    }
)


def _held_modules(model: ScriptModel, call: ast.Call) -> list[ast.expr]:
    from .holding_constructors import held_modules  # noqa: PLC0415 (reads other files)
    from .workspace_classes import unwrapped_call  # noqa: PLC0415 (imports the model)

    return held_modules(model, unwrapped_call(call))


def container_members(model: ScriptModel, scope: ast.AST, path: str) -> list[str]:
    """The names put in the module container ``path`` of ``scope``: the elements of its
    ``nn.ModuleList([...])`` display and what ``path.append(x)`` / ``path.extend([...])``
    adds; empty when ``path`` is not such a container there."""
    if "." in path:
        return []
    index: dict[tuple[int, str], list[str]] = model.memo(container_members, dict)
    key = (id(scope), path)
    if key in index:
        return index[key]
    members: list[tuple[int, int, str]] = []
    built = False
    for n in model.walk_scope(scope):
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == path for t in n.targets
        ):
            value = n.value
            if isinstance(value, ast.Call) and (model.call_name(value) or "").endswith(CONTAINERS):
                built = True
                for arg in value.args:
                    if isinstance(arg, ast.List | ast.Tuple):
                        members += [
                            (e.lineno, e.col_offset, d) for e in arg.elts if (d := dotted(e))
                        ]
            elif isinstance(value, ast.Call) and (held := _held_modules(model, value)):
                # ``trainer = GaussianDiffusionTrainer(net_model, ...)`` keeps ``net_model``.
                built = True
                members += [(e.lineno, e.col_offset, d) for e in held if (d := dotted(e))]
        elif (
            isinstance(n, ast.Call)
            and method_name(n) in ("append", "extend")
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == path
            and n.args
        ):
            arg = n.args[0]
            elts = arg.elts if isinstance(arg, ast.List | ast.Tuple) else [arg]
            members += [(e.lineno, e.col_offset, d) for e in elts if (d := dotted(e))]
    # In source order: the first member put in is the one a finding names.
    index[key] = found = list(dict.fromkeys(d for *_, d in sorted(members))) if built else []
    return found
