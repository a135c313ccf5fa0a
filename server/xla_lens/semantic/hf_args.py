"""Where a Hugging Face script's ``TrainingArguments`` come from.

Three shapes, in order of how fixable they are:
- a literal ``TrainingArguments(...)`` call (of transformers' class or a local subclass):
  keywords can be set on it;
- a local dataclass ``class TrainingArguments(transformers.TrainingArguments)`` whose
  fields override defaults (``optim: str = field(default="adamw_torch")``): the default is
  changed where it is written;
- ``HfArgumentParser((..., TrainingArguments)).parse_args_into_dataclasses()`` with
  transformers' own class: the values come from the command line, so the finding says which
  flag to pass (nothing in the file to fix).

TRL's configs (``SFTConfig``, ``DPOConfig``, ...) subclass ``TrainingArguments``, its trainers
(``SFTTrainer``, ...) subclass ``Trainer`` and ``TrlParser`` subclasses ``HfArgumentParser``
(its ``parse_args_and_config()`` also reads a ``--config`` YAML file): they are the same
thing to XLA. TRL exports them from ``trl``, ``trl.trainer`` and per-trainer modules
(``trl.trainer.sft_config``), so they are matched by package root and class name.

A recipe package may subclass them (``from recipes import SFTConfig``, a subclass of trl's
``SFTConfig`` in ``recipes/configs.py``): a parsed class of the workspace is followed through
its bases in their own files (``workspace_classes.chain``), and a field one of them sets is
that class's to own.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from .model import ScriptModel, dotted, keyword
from .workspace_calls import ParsedModule
from .workspace_classes import ClassRef, chain, class_reference, script_module

TRAINING_ARGS = {
    "transformers.TrainingArguments",
    "transformers.Seq2SeqTrainingArguments",
    "transformers.training_args.TrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
}
PARSERS = {"transformers.HfArgumentParser", "transformers.hf_argparser.HfArgumentParser"}
TRL_CONFIGS = {
    f"{n}Config"
    for n in ("SFT DPO ORPO KTO Reward PPO GRPO CPO BCO GKD OnlineDPO RLOO PRM XPO NashMD").split()
}
TRL_TRAINERS = {c.removesuffix("Config") + "Trainer" for c in TRL_CONFIGS} | {"IterativeSFTTrainer"}
TRL_PARSERS = {"TrlParser"}
# Before trl 0.12 PPOConfig was a plain dataclass (no optim / dataloader_num_workers field):
# a keyword added to its call raises TypeError there, so such fixes are for review.
LEGACY_TRL_CONFIGS = {"PPOConfig"}
LEGACY_REASON = (
    "trl before 0.12's PPOConfig is not a TrainingArguments and has no such field: "
    "check the installed trl version"
)

# HfArgumentParser's ways to read the values from a file, and from the command line.
FILE_PARSES = frozenset({"parse_json_file", "parse_yaml_file", "parse_dict"})
COMMAND_LINE_PARSES = frozenset({"parse_args_into_dataclasses", "parse_args"})


def _is_trl(qualname: str | None, names: set[str]) -> bool:
    return (
        bool(qualname) and qualname.split(".")[0] == "trl" and qualname.rsplit(".", 1)[-1] in names
    )


def is_training_args_name(qualname: str | None) -> bool:
    """transformers' TrainingArguments classes and TRL's configs (which subclass them)."""
    return qualname in TRAINING_ARGS or _is_trl(qualname, TRL_CONFIGS)


def is_parser_name(qualname: str | None) -> bool:
    return qualname in PARSERS or _is_trl(qualname, TRL_PARSERS)


def is_trainer_name(qualname: str | None) -> bool:
    """transformers' Trainer classes and TRL's trainers (which subclass Trainer)."""
    return bool(qualname) and (
        (qualname.startswith("transformers.") and qualname.endswith("Trainer"))
        or _is_trl(qualname, TRL_TRAINERS)
    )


def is_legacy_config_name(qualname: str | None) -> bool:
    return _is_trl(qualname, LEGACY_TRL_CONFIGS)


@dataclass(frozen=True)
class FieldDefault:
    stmt: ast.stmt  # the class-body statement defining the field
    value: ast.expr  # the default expression (inside ``field(default=...)`` when used)


class HfArguments:
    def __init__(self, model: ScriptModel) -> None:
        self.model = model

    @cached_property
    def subclasses(self) -> dict[str, ast.ClassDef]:
        """Local classes deriving (directly or through each other) from TrainingArguments."""
        out: dict[str, ast.ClassDef] = {}
        classes = [c for c in self.model.nodes_of(ast.ClassDef) if isinstance(c, ast.ClassDef)]
        changed = True
        while changed:
            changed = False
            for cls in classes:
                if cls.name in out:
                    continue
                for base in cls.bases:
                    if is_training_args_name(self.model.qualname(base)) or dotted(base) in out:
                        out[cls.name] = cls
                        changed = True
                        break
        return out

    def is_training_args_class(self, node: ast.AST) -> bool:
        return is_training_args_name(self.model.qualname(node)) or (
            isinstance(node, ast.Name) and node.id in self.subclasses
        )

    @cached_property
    def calls(self) -> list[ast.Call]:
        """Literal constructor calls (transformers' classes and local subclasses)."""
        # ``call_name`` is ``qualname(c.func)`` resolved once per call and parse.
        return [
            c
            for c in self.model.calls
            if is_training_args_name(self.model.call_name(c))
            or (isinstance(c.func, ast.Name) and c.func.id in self.subclasses)
        ]

    def field_default(self, cls: ast.ClassDef, name: str) -> FieldDefault | None:
        for stmt in cls.body:
            target = value = None
            if isinstance(stmt, ast.AnnAssign):
                target, value = stmt.target, stmt.value
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
            if not (isinstance(target, ast.Name) and target.id == name) or value is None:
                continue
            if isinstance(value, ast.Call) and (dotted(value.func) or "").endswith("field"):
                kw = keyword(value, "default")
                if kw is None:
                    return None  # default_factory or no default: not a literal we can read
                value = kw.value
            return FieldDefault(stmt, value)
        return None

    def inherited_default(self, cls: ast.ClassDef, name: str) -> FieldDefault | None:
        """The field in ``cls`` or the nearest local base class that defines it."""
        for current in self._local_chain(cls):
            found = self.field_default(current, name)
            if found is not None:
                return found
        return None

    def _local_chain(self, cls: ast.ClassDef | None) -> Iterator[ast.ClassDef]:
        """``cls`` and its base classes defined in this file, nearest first (the first local
        base of each), each once."""
        seen: set[str] = set()
        while cls is not None and cls.name not in seen:
            seen.add(cls.name)
            yield cls
            cls = next(
                (
                    self.subclasses[b.id]
                    for b in cls.bases
                    if isinstance(b, ast.Name) and b.id in self.subclasses
                ),
                None,
            )

    @cached_property
    def parsed_classes(self) -> list[tuple[ast.Call, ast.expr]]:
        """(HfArgumentParser call, the TrainingArguments class it parses into)."""
        out = []
        for call in self.model.calls:
            if not is_parser_name(self.model.call_name(call)) or not call.args:
                continue
            first = call.args[0]
            items = first.elts if isinstance(first, ast.Tuple | ast.List) else [first]
            for item in items:
                if self.is_training_args_class(item) or self.workspace_class(item):
                    out.append((call, item))
        return out

    def workspace_class(self, item: ast.expr) -> tuple[ClassRef, ...] | None:
        """The chain of a class another workspace file defines that derives from
        TrainingArguments (a TRL config), or None (also for a class of this file)."""
        found = class_reference(script_module(self.model), item)
        if found is None or str(found.path) == str(self.model.path):
            return None
        classes = chain(found)
        derives = any(
            is_training_args_name(_module_qualname(c.module, base))
            for c in classes
            for base in c.node.bases
        )
        return classes if derives else None

    def workspace_default(self, classes: tuple[ClassRef, ...], name: str) -> FieldDefault | None:
        """The field ``name`` set by the nearest class of a workspace chain."""
        for c in classes:
            found = self.field_default(c.node, name)
            if found is not None:
                return found
        return None

    def file_parses(self, parser: ast.Call) -> tuple[list[ast.Call], bool]:
        """The ``parse_json_file``/``parse_yaml_file``/``parse_dict`` calls of ``parser`` (by
        the name it is bound to), and whether it also parses the command line."""
        stmt = self.model.parent(parser)
        names = (
            {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            if isinstance(stmt, ast.Assign)
            else set()
        )
        files, command_line = [], False
        for call in self.model.method_calls(*FILE_PARSES, *COMMAND_LINE_PARSES):
            recv = call.func.value  # type: ignore[attr-defined]
            if not (recv is parser or (isinstance(recv, ast.Name) and recv.id in names)):
                continue
            if recv is not parser and call.lineno < parser.lineno:
                continue  # the name's earlier value (an argparse parser of the same name)
            if call.func.attr in FILE_PARSES:  # type: ignore[attr-defined]
                files.append(call)
            else:
                command_line = True
        return files, command_line

    def reads_config_file(self, parser: ast.Call) -> bool:
        """TRL's parser: ``parse_args_and_config()`` also takes values from ``--config``."""
        return _is_trl(self.model.call_name(parser), TRL_PARSERS)

    def is_legacy_call(self, call: ast.Call) -> bool:
        """A call of trl's PPOConfig (or a local subclass of it): see LEGACY_REASON."""
        if is_legacy_config_name(self.model.call_name(call)):
            return True
        cls = self.subclasses.get(call.func.id) if isinstance(call.func, ast.Name) else None
        return any(
            is_legacy_config_name(self.model.qualname(b))
            for current in self._local_chain(cls)
            for b in current.bases
        )

    def parsed_subclass(self, item: ast.expr) -> ast.ClassDef | None:
        return self.subclasses.get(item.id) if isinstance(item, ast.Name) else None


def hf_arguments(model: ScriptModel) -> HfArguments:
    cached = getattr(model, "_xla_lens_hf_arguments", None)
    if cached is None:
        cached = HfArguments(model)
        model._xla_lens_hf_arguments = cached  # type: ignore[attr-defined]
    return cached


def _module_qualname(module: ParsedModule, base: ast.expr) -> str | None:
    """``trl.SFTConfig`` for ``SFTConfig`` (``from trl import SFTConfig``) or ``trl.SFTConfig``
    (``import trl``) in ``module``; None for a name it defines or a relative import."""
    name = dotted(base)
    if name is None:
        return None
    root, _, rest = name.partition(".")
    if root in module.imports:
        return ".".join(p for p in (module.imports[root], rest) if p)
    if root in module.reexports:
        source, level, original = module.reexports[root]
        if level == 0:
            return ".".join(p for p in (source, original, rest) if p)
    return None


def runs_no_trainer(model: ScriptModel, builds: str) -> bool:
    """The script parses or builds TrainingArguments only for their values: it calls no
    Trainer (nothing whose name ends in ``Trainer``, the library's or its own) and builds
    ``builds`` itself ("optimizer": a ``torch.optim`` class; "loader": a ``DataLoader``).
    AMCLR's train2.py (held-out 40) reads learning rate and batch size from them and trains
    in its own loop: the Trainer's ``optim`` and ``dataloader_num_workers`` do nothing there."""

    def trainer_called() -> bool:
        for call in model.calls:
            name = model.call_name(call) or dotted(call.func) or ""
            if is_trainer_name(name) or name.rsplit(".", 1)[-1].endswith("Trainer"):
                return True
        return False

    if model.memo(("hf_args", "trainer called"), trainer_called):
        return False
    for call in model.calls:
        name = model.call_name(call) or ""
        if (
            builds == "optimizer"
            and name.startswith("torch.optim.")
            and ".lr_scheduler" not in name
        ):
            return True
        if builds == "loader" and name == "torch.utils.data.DataLoader":
            return True
    return False
