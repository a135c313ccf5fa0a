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
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property

from .model import ScriptModel, dotted, keyword

TRAINING_ARGS = {
    "transformers.TrainingArguments",
    "transformers.Seq2SeqTrainingArguments",
    "transformers.training_args.TrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
}
PARSERS = {"transformers.HfArgumentParser", "transformers.hf_argparser.HfArgumentParser"}


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
                    if self.model.qualname(base) in TRAINING_ARGS or dotted(base) in out:
                        out[cls.name] = cls
                        changed = True
                        break
        return out

    def is_training_args_class(self, node: ast.AST) -> bool:
        return self.model.qualname(node) in TRAINING_ARGS or (
            isinstance(node, ast.Name) and node.id in self.subclasses
        )

    @cached_property
    def calls(self) -> list[ast.Call]:
        """Literal constructor calls (transformers' classes and local subclasses)."""
        # ``call_name`` is ``qualname(c.func)`` resolved once per call and parse.
        return [
            c
            for c in self.model.calls
            if self.model.call_name(c) in TRAINING_ARGS
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
        seen: set[str] = set()
        current: ast.ClassDef | None = cls
        while current is not None and current.name not in seen:
            seen.add(current.name)
            found = self.field_default(current, name)
            if found is not None:
                return found
            current = next(
                (
                    self.subclasses[b.id]
                    for b in current.bases
                    if isinstance(b, ast.Name) and b.id in self.subclasses
                ),
                None,
            )
        return None

    @cached_property
    def parsed_classes(self) -> list[tuple[ast.Call, ast.expr]]:
        """(HfArgumentParser call, the TrainingArguments class it parses into)."""
        out = []
        for call in self.model.calls:
            if self.model.call_name(call) not in PARSERS or not call.args:
                continue
            first = call.args[0]
            items = first.elts if isinstance(first, ast.Tuple | ast.List) else [first]
            for item in items:
                if self.is_training_args_class(item):
                    out.append((call, item))
        return out

    def parsed_subclass(self, item: ast.expr) -> ast.ClassDef | None:
        return self.subclasses.get(item.id) if isinstance(item, ast.Name) else None


def hf_arguments(model: ScriptModel) -> HfArguments:
    cached = getattr(model, "_xla_lens_hf_arguments", None)
    if cached is None:
        cached = HfArguments(model)
        model._xla_lens_hf_arguments = cached  # type: ignore[attr-defined]
    return cached
