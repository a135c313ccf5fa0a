"""Code that never runs on the XLA device, for the conversion rules to leave alone.

Two kinds, both decided from the source alone:

* **The other side of an XLA switch.** A script that already picks between XLA and CUDA
  (``device = xm.xla_device() if use_xla else torch.device("cuda")``, ``if is_xla(): ...
  else: DDP(...)``, a helper that returns early for XLA) is converted already: its CUDA side
  runs only when the user asks for CUDA, and rewriting it for XLA erases the script's CUDA
  mode. A switch is an ``if``/conditional one side of which calls torch_xla (or names an
  ``"xla"`` device) and the other side of which is CUDA code (a ``torch.cuda`` call, a
  ``.cuda()``, a ``"cuda..."``/``"nccl"`` string) and whose test does not ask about CUDA (the
  conversion's own ``"cuda" if "cuda" in d else "xla"`` is a CUDA picker), and that the script
  wrote itself (torch_xla API no fix writes, or a test that names the XLA mode: otherwise a
  branch a fix converted, ``if args.distributed:``, would make its ``else`` a "CUDA mode"); every other ``if`` on the same test (or its
  ``not``) splits the same way. A switch whose XLA side always leaves the block (``return``,
  ``raise``) makes the rest of the block the CUDA side. A test of torch_xla itself
  (``if is_torch_xla_available(): xm.save(...) else: torch.save(...)``) is a switch whatever
  the other side holds: it never runs where torch_xla does. In HF Trainer code (a script that
  runs a Trainer or defines a Trainer / TrainingArguments subclass), ``if args.n_gpu > 1:`` is
  the Trainer's own CUDA side: TrainingArguments set n_gpu to 0 on XLA.
* **Code under a guard that is False on an XLA host.** ``if torch.cuda.is_available():``,
  ``torch.cuda.device_count() > 0``, ``device.type == "cuda"`` (the device the conversion makes
  XLA), ``x.is_cuda``, or a flag bound once to one of them (``use_cuda = device.type ==
  "cuda"``). A flag the user sets (``if args.cuda:``) is not such a guard: the user may pass it
  on an XLA host. What such a guard skips on XLA still matters when it places the model (the
  model then never reaches XLA), so only CUDA-only calls there are harmless. A guard that
  itself decides a device or a placement, or reads a flag that one does (``device = "cuda" if
  use_cuda else "cpu"``), is no such guard: the conversion rewrites those tests with the
  device picker (placement_guards: ``use_cuda = True``), and its block may then run on XLA.

Pure analysis: ``regions(model)`` returns both lists of spans, computed once per model.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .exclusive_flags import refused_with_xla_mode
from .model import ScriptModel, method_name
from .span import Span
from .workspace_calls import parsed_module

AVAILABILITY = frozenset({"torch.cuda.is_available", "torch.accelerator.is_available"})
CUDA_COUNTS = frozenset({"torch.cuda.device_count"})
CUDA_STRINGS = ("cuda", "nccl")
DEVICE_CHOICES = frozenset({"torch.device", "torch.accelerator.current_accelerator"})
PLACING_METHODS = frozenset({"to", "cuda"})
STOPS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
TORCH_XLA_AVAILABILITY = frozenset(
    {"is_torch_xla_available", "is_torch_tpu_available", "is_tpu_available"}
)


@dataclass(frozen=True)
class Region:
    """Source that runs only off XLA: ``span``, and the line (1-based) of the decision."""

    span: Span
    line: int


@dataclass(frozen=True)
class Regions:
    not_xla: tuple[Region, ...] = ()  # the CUDA side of an XLA switch
    cuda_only: tuple[Region, ...] = ()  # under a guard False on an XLA host
    switch_line: int | None = None  # the first XLA switch (1-based), if the script has one
    # Attributes of options whose "xla" value is the script's own XLA mode (``device`` of
    # ``args.device == "xla"``): the user picks XLA on the command line.
    mode_attributes: frozenset[str] = frozenset()

    def not_xla_at(self, span: Span) -> Region | None:
        return next((r for r in self.not_xla if r.span.contains(span)), None)

    def cuda_only_at(self, span: Span) -> Region | None:
        return next((r for r in self.cuda_only if r.span.contains(span)), None)


def regions(model: ScriptModel) -> Regions:
    cached = getattr(model, "_xla_lens_xla_branches", None)
    if cached is None:
        cached = _compute(model)
        model._xla_lens_xla_branches = cached  # type: ignore[attr-defined]
    return cached


def _xla_leaf(model: ScriptModel, n: ast.AST) -> bool:
    if isinstance(n, ast.Call):
        return (model.call_name(n) or "").split(".")[0] == "torch_xla"
    return (
        isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and (n.value == "xla" or n.value.startswith("xla:"))
    )


def _cuda_leaf(model: ScriptModel, n: ast.AST) -> bool:
    if isinstance(n, ast.Call):
        name = model.call_name(n) or ""
        return name.startswith("torch.cuda.") or method_name(n) == "cuda"
    if isinstance(n, ast.Constant) and isinstance(n.value, str):
        return n.value.startswith(CUDA_STRINGS)
    if isinstance(n, ast.JoinedStr) and n.values:
        first = n.values[0]
        return isinstance(first, ast.Constant) and str(first.value).startswith("cuda")
    return False


def _marks(model: ScriptModel, leaf) -> set[int]:  # noqa: ANN001 - a private predicate
    """Ids of the nodes that hold a ``leaf`` (one pass, so each branch test is a lookup)."""
    marked: set[int] = set()
    for n in model.nodes_of(ast.Call, ast.Constant, ast.JoinedStr):
        if id(n) in marked or not leaf(model, n):
            continue
        marked.add(id(n))
        for a in model.ancestors(n):
            if id(a) in marked:
                break
            marked.add(id(a))
    return marked


def _device_leaf(model: ScriptModel, n: ast.AST) -> bool:
    """A device choice or a placement: what a conversion rewrites, test and all."""
    if isinstance(n, ast.Call):
        return model.call_name(n) in DEVICE_CHOICES or method_name(n) in PLACING_METHODS
    if isinstance(n, ast.Constant) and isinstance(n.value, str):
        return n.value.startswith("cuda")
    return isinstance(n, ast.JoinedStr) and _cuda_leaf(model, n)


class _Code:
    def __init__(self, model: ScriptModel) -> None:
        self.xla = _marks(model, _xla_leaf)
        self.cuda = _marks(model, _cuda_leaf)
        self.device = _marks(model, _device_leaf)

    def is_device(self, nodes: list) -> bool:  # noqa: ANN001
        return any(id(n) in self.device for n in nodes)

    def is_xla(self, nodes: list) -> bool:  # noqa: ANN001
        return any(id(n) in self.xla for n in nodes)

    def is_cuda(self, nodes: list) -> bool:  # noqa: ANN001
        return any(id(n) in self.cuda for n in nodes)


def _leaves(stmts: list) -> bool:  # noqa: ANN001 - statements (or an IfExp's value)
    """The block always leaves (``return``/``raise``...): its last statement does, or is a
    ``try`` whose body and every handler leave (``try: import torch_xla...; return
    xm.xla_device() except ImportError: return cpu``, held-out 71's Trainium tutorial), or an
    ``if`` both of whose sides leave."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, STOPS):
        return True
    if isinstance(last, ast.Try):
        return (_leaves(last.body) or _leaves(last.orelse)) and all(
            _leaves(h.body) for h in last.handlers
        )
    if isinstance(last, ast.If):
        return _leaves(last.body) and _leaves(last.orelse)
    return False


def _key(test: ast.expr) -> tuple[str, bool]:
    """The test's identity and polarity: ``not X`` is X, negated."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    return ast.dump(test), negated


def _block_span(model: ScriptModel, stmts: list[ast.stmt]) -> Span | None:
    if not stmts:
        return None
    return Span(model.span(stmts[0]).start, model.span(stmts[-1]).end)


def _siblings(model: ScriptModel, node: ast.If) -> list[ast.stmt]:
    """The statements after ``node`` in its block."""
    parent = model.parent(node)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and node in block:
            return block[block.index(node) + 1 :]
    return []


def _compute(model: ScriptModel) -> Regions:
    branches = list(model.nodes_of(ast.If, ast.IfExp))
    code = _Code(model)
    switch_keys: dict[tuple[str, bool], int] = {}  # (test, polarity of the XLA side) -> line
    # ``args.device`` of ``xm.xla_device() if args.device == "xla" else ...``: an option whose
    # "xla" value is the script's own XLA mode -> the line of that test.
    mode_options: dict[str, int] = {}
    not_xla: list[Region] = []
    for node in branches:
        body = node.body if isinstance(node.body, list) else [node.body]
        orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
        option = _mode_option(node.test, "xla")
        if option is not None:
            # ``if backend == "xla": rank = _init_xla() else: rank = _init_cuda()`` (held-out
            # 56's control): the test names the script's own XLA mode, whatever each side
            # calls; its other side runs only off XLA.
            mode_options.setdefault(option, node.lineno)
            other_side = _block_span(model, orelse) if isinstance(node, ast.If) else None
            if isinstance(node, ast.If) and not node.orelse and _leaves(body):
                # ``if backend == "xla": return xm.xla_device()``: the rest is the other mode.
                other_side = _block_span(model, _siblings(model, node))
            if isinstance(node, ast.IfExp):
                other_side = model.span(node.orelse)
            if other_side is not None:
                not_xla.append(Region(other_side, node.lineno))
            continue
        xla_body, xla_else = code.is_xla(body), code.is_xla(orelse)
        if xla_body == xla_else or code.is_cuda([node.test]):
            # A test that asks about CUDA (``"cuda" in args.device``, the conversion's own
            # autocast device type) picks CUDA or not; a switch asks for XLA.
            continue
        xla_side, other = (body, orelse) if xla_body else (orelse, body)
        rest: list[ast.stmt] = []
        if isinstance(node, ast.If) and not node.orelse and _leaves(body):
            rest = _siblings(model, node)
            other = rest
        if not other and _mode_flag(node.test):
            # ``if use_xla(): xm.mark_step()`` with no other side: the test is the script's XLA
            # mode all the same, so ``if not use_xla(): torch.cuda.empty_cache()`` elsewhere
            # is its CUDA side (CLIPA's train.py, held-out 37).
            test, negated = _key(node.test)
            switch_keys.setdefault((test, negated != xla_else), node.lineno)
            continue
        if not other or code.is_xla(other):
            continue
        if (
            not code.is_cuda(other)
            and not _asks_for_torch_xla(model, node.test)
            and not _mode_flag(node.test)
        ):
            # Without CUDA code on the other side, only a test of torch_xla itself
            # (``if is_torch_xla_available(): xm.save(...) else: torch.save(...)``) or of
            # the script's own XLA mode (``if self.use_tpu: xm.mesh_reduce(...) else:
            # loss.item()``) says that side never runs where torch_xla does.
            continue
        if not _switch_written_by_hand(model, node.test):
            continue
        test, negated = _key(node.test)
        switch_keys.setdefault((test, negated != xla_else), node.lineno)
        span = (
            _block_span(model, other)
            if isinstance(node, ast.If)
            else model.span(node.orelse if xla_body else node.body)
        )  # type: ignore[arg-type]
        if span is not None:
            not_xla.append(Region(span, node.lineno))
    # ``if self.fp16 and use_tpu: raise``: in XLA mode the option is off, so the body of
    # every ``if self.fp16:`` is the CUDA side (its ``else`` may run on XLA).
    for option, line in refused_with_xla_mode(model, _mode_flag).items():
        switch_keys.setdefault((option, True), line)
    if switch_keys:
        for node in branches:
            test, negated = _key(node.test)
            for (key, xla_negated), line in switch_keys.items():
                if key != test:
                    continue
                body = node.body if isinstance(node.body, list) else [node.body]
                orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
                other = body if negated != xla_negated else orelse
                if isinstance(node, ast.If):
                    span = _block_span(model, other)  # type: ignore[arg-type]
                else:
                    span = model.span(other[0]) if other else None
                if span is not None:
                    not_xla.append(Region(span, line))
    if mode_options:
        # ``if args.device == "cuda": torch.backends.cudnn.benchmark = True`` beside the
        # script's own ``args.device == "xla"`` mode: that block runs only when the user asks
        # for CUDA (held-out 53's hfta pointnet; its XLA mode needs no conversion).
        for node in model.nodes_of(ast.If):
            assert isinstance(node, ast.If)
            option = _mode_option(node.test, "cuda")
            if option in mode_options:
                span = _block_span(model, node.body)
                if span is not None:
                    not_xla.append(Region(span, mode_options[option]))
    not_xla += _functions_called_only_off_xla(model, not_xla)
    if _hf_trainer_code(model):
        # HF TrainingArguments set n_gpu to 0 on XLA (the Trainer's own device switch):
        # ``if args.n_gpu > 1: model = nn.DataParallel(model)`` is its CUDA side.
        for node in model.nodes_of(ast.If):
            assert isinstance(node, ast.If)
            if any(_several_gpus(part) for part in _conjuncts(node.test)):
                span = _block_span(model, node.body)
                if span is not None:
                    not_xla.append(Region(span, node.lineno))
    # A test that decides a device or a placement is rewritten with the device picker
    # (placement_guards: ``use_cuda = True``), so what it guards may run on XLA after all.
    deciding: set[int] = set()
    flags: set[str] = set()
    for node in branches:
        body = node.body if isinstance(node.body, list) else [node.body]
        orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
        if code.is_device(body) or code.is_device(orelse):
            deciding.add(id(node))
            flags.update(_flags(node.test))
    cuda_only = [
        Region(span, node.lineno)
        for node in model.nodes_of(ast.If)
        if isinstance(node, ast.If)
        and id(node) not in deciding
        and not flags.intersection(_flags(node.test))
        and _false_on_xla(model, node, node.test)
        for span in [_block_span(model, node.body)]
        if span is not None
    ]
    lines = [*switch_keys.values(), *mode_options.values()]
    first = min(lines) if lines else None
    attributes = frozenset(
        node.left.attr
        for node in model.nodes_of(ast.Compare)
        if isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Attribute)
        and ast.dump(node.left) in mode_options
    )
    return Regions(tuple(not_xla), tuple(cuda_only), first, attributes)


def _functions_called_only_off_xla(model: ScriptModel, regions: list[Region]) -> list[Region]:
    """The bodies of the script's functions every call of which sits in ``regions``
    (``_init_cuda_distributed()`` called only on the non-XLA side of the script's switch):
    they run only off XLA too. Followed a few calls deep."""
    found: list[Region] = []
    known = list(regions)
    for _ in range(3):
        added = False
        for name, fn in model.functions.items():
            if not isinstance(fn, ast.FunctionDef) or any(
                r.span.contains(model.span(fn)) for r in known
            ):
                continue
            # Every mention, not only the calls: ``xmp.spawn(main, ...)`` on the XLA side runs
            # ``main`` there (held-out 34's moco_v3_tpu calls it directly on its other side).
            uses = [n for n in model.name_nodes(name) if isinstance(n.ctx, ast.Load)]
            if not uses:
                continue
            holders = [
                next((r for r in known if r.span.contains(model.span(u))), None) for u in uses
            ]
            if any(h is None for h in holders):
                continue
            span = _block_span(model, fn.body)
            if span is not None:
                region = Region(span, holders[0].line)  # type: ignore[union-attr]
                found.append(region)
                known.append(region)
                added = True
        if not added:
            break
    return found


def negated_test(test: ast.expr) -> bool:
    return isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)


def _mode_option(test: ast.expr, mode: str) -> str | None:
    """``args.device`` of ``args.device == "xla"`` (``mode`` "xla"; "cuda" also takes
    ``"cuda:0"``), else None."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.left, ast.Name | ast.Attribute)
    ):
        return None
    value = test.comparators[0]
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    if value.value != mode and not (mode == "cuda" and value.value.startswith("cuda:")):
        return None
    return ast.dump(test.left)


def _switch_written_by_hand(model: ScriptModel, test: ast.expr) -> bool:
    """The script's own XLA/CUDA switch, not a branch a conversion fix half converted: the
    script uses torch_xla API no fix writes, or the test names the XLA mode (a flag, an "xla"
    or "tpu" string, a test of torch_xla itself). Held-out 49's semseg: after the fix of
    ``DistributedDataParallel(model.cuda())`` under ``if args.distributed:``, the ``else``'s
    ``nn.DataParallel(model.cuda())`` was taken for a CUDA mode and kept its ``.cuda()``."""
    from .device_intent import hand_written_xla  # noqa: PLC0415 (device_intent imports this)

    if _mode_flag(test) or _asks_for_torch_xla(model, test) or hand_written_xla(model):
        return True
    for n in ast.walk(test):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            if n.value.lower().startswith(("xla", "tpu")):
                return True
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
        if name and _XLA_MODE_NAME.search(name):
            return True
    return False


def _mode_flag(test: ast.expr) -> bool:
    """A test named for the XLA mode: a flag, an attribute or a call with no arguments whose
    name says XLA or TPU (``use_xla``, ``args.tpu``, ``use_xla()``), or its ``not``. Not any
    test with torch_xla code under it: run_clm's ``if model_args.spmd_defer_init:`` picks
    between two XLA placements, and a step count or data test is no mode either."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Call):
        if test.args or test.keywords:
            return False
        test = test.func
    if isinstance(test, ast.Name):
        name = test.id
    elif isinstance(test, ast.Attribute):
        name = test.attr
    else:
        return False
    return bool(_XLA_MODE_NAME.search(name))


# ``config.TPUs`` too (held-out 64's Bert_Sentiment: its torch_xla imports sit under it).
_XLA_MODE_NAME = re.compile(r"(?i)(?:^|_)(?:xla|tpus?)(?:$|_)|^(?:is|use|on)_?(?:xla|tpu)")


def _hf_trainer_code(model: ScriptModel) -> bool:
    """A script that runs an HF Trainer, or defines a Trainer / TrainingArguments subclass."""
    from .hf_args import is_trainer_name, is_training_args_name

    if model.uses_trainer:
        return True
    for cls in model.nodes_of(ast.ClassDef):
        for base in cls.bases:  # type: ignore[attr-defined]
            name = model.qualname(base)
            if is_trainer_name(name) or is_training_args_name(name):
                return True
    return False


def _several_gpus(part: ast.expr) -> bool:
    """``args.n_gpu > 1`` / ``self.args.n_gpu >= 1``: a count that is 0 on XLA."""
    if not (isinstance(part, ast.Compare) and len(part.ops) == 1):
        return False
    left, op, right = part.left, part.ops[0], part.comparators[0]
    bound = right.value if isinstance(right, ast.Constant) else None
    if not (isinstance(left, ast.Attribute) and left.attr == "n_gpu" and type(bound) is int):
        return False
    return (isinstance(op, ast.Gt) and bound >= 0) or (isinstance(op, ast.GtE) and bound >= 1)


def _asks_for_torch_xla(model: ScriptModel, test: ast.expr) -> bool:
    """``is_torch_xla_available()`` / ``is_torch_tpu_available()`` (transformers,
    accelerate), possibly negated: True exactly where torch_xla is usable."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if not isinstance(test, ast.Call):
        return False
    name = model.call_name(test) or (test.func.id if isinstance(test.func, ast.Name) else "")
    return name.rpartition(".")[2] in TORCH_XLA_AVAILABILITY


def _flags(test: ast.expr) -> set[str]:
    """The plain names a test reads as conditions (``use_cuda and not cpu``), not ``args`` of
    ``args.xla``."""
    if isinstance(test, ast.Name):
        return {test.id}
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _flags(test.operand)
    if isinstance(test, ast.BoolOp):
        return {name for v in test.values for name in _flags(v)}
    return set()


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for v in test.values for c in _conjuncts(v)]
    return [test]


def _false_on_xla(model: ScriptModel, at: ast.AST, test: ast.expr, depth: int = 0) -> bool:
    """Whether ``test`` is provably False on an XLA host (one false conjunct is enough)."""
    for part in _conjuncts(test):
        if _false_part(model, at, part, depth):
            return True
    return False


def _false_part(model: ScriptModel, at: ast.AST, part: ast.expr, depth: int) -> bool:
    if isinstance(part, ast.Call):
        return model.call_name(part) in AVAILABILITY and not part.args and not part.keywords
    if isinstance(part, ast.Attribute) and part.attr == "is_cuda":
        return True
    if isinstance(part, ast.Compare) and len(part.ops) == 1:
        left, op, right = part.left, part.ops[0], part.comparators[0]
        if isinstance(op, ast.Eq):
            for a, b in ((left, right), (right, left)):
                if (
                    isinstance(a, ast.Attribute)
                    and a.attr == "type"
                    and isinstance(b, ast.Constant)
                    and b.value == "cuda"
                ):
                    return True
        if isinstance(left, ast.Call) and model.call_name(left) in CUDA_COUNTS:
            bound = right.value if isinstance(right, ast.Constant) else None
            if isinstance(bound, int) and not isinstance(bound, bool):
                return (isinstance(op, ast.Gt) and bound >= 0) or (
                    isinstance(op, ast.GtE) and bound >= 1
                )
        return False
    if isinstance(part, ast.Name) and depth < 2:
        value = _single_binding(model, at, part.id)
        return value is not None and _false_on_xla(model, value, value, depth + 1)
    return False


def _single_binding(model: ScriptModel, at: ast.AST, name: str) -> ast.expr | None:
    """The value of the one plain binding of ``name`` in the function around ``at`` (or, when
    that function binds it nowhere, at module level)."""
    fn = model.enclosing_function(at)
    if fn is not None and any(
        a.arg == name for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs
    ):
        return None  # a parameter: its value comes from the callers
    cache = model.__dict__.setdefault("_xla_lens_branch_bindings", {})
    for scope in ([fn] if fn is not None else []) + [model.tree]:
        if (id(scope), name) in cache:
            found = cache[id(scope), name]
            if found is not _UNBOUND:
                return found
            continue
        values: list[ast.expr | None] = []
        for n in model.walk_scope(scope):
            targets: list[ast.expr] = []
            if isinstance(n, ast.Assign):
                targets = n.targets
            elif isinstance(n, ast.AnnAssign | ast.AugAssign | ast.NamedExpr | ast.For):
                targets = [n.target]
            for t in targets:
                if any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(t)):
                    plain = isinstance(n, ast.Assign | ast.AnnAssign) and isinstance(t, ast.Name)
                    values.append(n.value if plain else None)  # type: ignore[union-attr]
        cache[id(scope), name] = (values[0] if len(values) == 1 else None) if values else _UNBOUND
        if values:
            return cache[id(scope), name]
    return None


_UNBOUND = object()


_helper_models: dict[int, tuple[object, ScriptModel]] = {}


def lines_off_xla(path: str, lines: list[int]) -> bool:
    """Whether every one of ``lines`` (1-based) of the workspace file ``path`` is the CUDA side
    of that file's own XLA switch (a helper that sets up XLA and returns before its NCCL and
    ``torch.cuda`` setup): the helper handles XLA already."""
    from pathlib import Path

    parsed = parsed_module(Path(path))
    if parsed is None or not lines:
        return False
    cached = _helper_models.get(id(parsed))
    if cached is None or cached[0] is not parsed:
        if len(_helper_models) >= 32:
            _helper_models.clear()
        cached = (parsed, ScriptModel(parsed.source, parsed.tree, str(path)))
        _helper_models[id(parsed)] = cached
    found = regions(cached[1])
    return all(
        any(r.span.start.line <= line - 1 <= r.span.end.line for r in found.not_xla)
        for line in lines
    )


__all__ = ["Region", "Regions", "lines_off_xla", "regions"]
