"""The vocabulary every rule speaks: positions, findings, and declarative edits.

Rules never touch libcst themselves. They describe *what* to change as small edit
operations anchored on source positions; the engine applies them in one libcst pass
(so formatting and comments survive) only when a fix is actually requested.
Detection therefore stays on the cheap stdlib ``ast`` parse.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..semantic.edits import (  # noqa: F401  (re-exported: the vocabulary rules speak)
    AddImport,
    AppendToBody,
    EditOp,
    InsertAfter,
    InsertBefore,
    RemoveKeyword,
    RemoveStatement,
    Replace,
    ReplaceStatement,
    SetArgs,
    SetKeyword,
)
from ..semantic.line_refs import has_refs, rendered
from ..semantic.span import Pos, Span  # noqa: F401
from ..semantic.xla_api import Target  # noqa: F401

if TYPE_CHECKING:
    from ..semantic.model import ScriptModel


class Severity(enum.IntEnum):
    # Values match LSP DiagnosticSeverity so adapters can pass them straight through.
    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4

    @classmethod
    def parse(cls, text: str) -> Severity:
        aliases = {"info": "information", "warn": "warning"}
        key = aliases.get(text.strip().lower(), text.strip().lower())
        try:
            return cls[key.upper()]
        except KeyError:
            raise ValueError(
                f"unknown severity {text!r} (use error, warning, information or hint)"
            ) from None


class Category(enum.StrEnum):
    CONVERSION = "conversion"
    DISTRIBUTED = "distributed"
    TRAINER = "trainer"
    PERFORMANCE = "performance"
    MODERNISATION = "modernisation"
    # torch_xla API used in a way that is wrong on XLA whoever wrote it (a converted script or
    # one written for XLA): not a conversion step, a bug.
    CORRECTNESS = "correctness"


class LazyOps(Sequence[EditOp]):
    """A fix's edit operations, built on first use.

    Detection must decide *that* a fix exists, its title and whether it is safe (the
    diagnostics and code action titles show them); the edit operations themselves are only
    needed when a fix is previewed or applied (codeAction/resolve, fix-all, Convert, ``fix``).
    A rule whose ops are costly to build passes ``LazyOps(lambda: ...)`` as ``Fix.ops``;
    the builder must depend only on the parsed script, never on mutable state.
    """

    __slots__ = ("_build", "_ops")

    def __init__(self, build: Callable[[], Iterable[EditOp]]) -> None:
        self._build: Callable[[], Iterable[EditOp]] | None = build
        self._ops: tuple[EditOp, ...] | None = None

    def resolve(self) -> tuple[EditOp, ...]:
        if self._ops is None:
            assert self._build is not None
            self._ops = tuple(self._build())
            self._build = None  # drop the closure (and what it holds) once built
        return self._ops

    def __len__(self) -> int:
        return len(self.resolve())

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        return self.resolve()[index]

    def __iter__(self) -> Iterator[EditOp]:
        return iter(self.resolve())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyOps | tuple):
            return self.resolve() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.resolve())

    def __repr__(self) -> str:
        return repr(self.resolve())


@dataclass(frozen=True)
class Fix:
    title: str
    # A tuple, or LazyOps for ops built only when the fix is used.
    ops: tuple[EditOp, ...] | LazyOps
    # A safe fix provably keeps the program's meaning on XLA (every use of every name it
    # touches was checked). Unsafe fixes are offered as quick fixes for review and applied
    # only on explicit request (`fix --unsafe-fixes`), never by fix-all / Convert.
    safe: bool = True
    # Why the fix needs review (shown with the finding): required when ``safe`` is False.
    review_reason: str = ""
    # (title, review_reason) as written, with their line references marked; None when they
    # have none (see ``semantic.line_refs``).
    marked: tuple[str | None, ...] | None = field(default=None, repr=False)

    _TEXTS = ("title", "review_reason")

    def __post_init__(self) -> None:
        _settle_marks(
            self, _texts_of(self, self._TEXTS), lambda texts: _set(self, self._TEXTS, texts)
        )


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    span: Span
    severity: Severity
    fix: Fix | None = None
    # Set when there is no safe automatic fix: what the user should do by hand.
    manual: str | None = None
    deprecated: bool = False
    related: tuple[tuple[Span, str], ...] = ()
    # (message, manual, each related text) as written, with their line references marked;
    # None when they have none (see ``semantic.line_refs``).
    marked: tuple[str | None, ...] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        texts = (self.message, self.manual, *(text for _, text in self.related))

        def store(plain: tuple[str | None, ...]) -> None:
            object.__setattr__(self, "message", plain[0])
            object.__setattr__(self, "manual", plain[1])
            related = tuple((s, t) for (s, _), t in zip(self.related, plain[2:], strict=True))
            object.__setattr__(self, "related", related)

        _settle_marks(self, texts, store)


def _texts_of(obj: object, names: tuple[str, ...]) -> tuple[str | None, ...]:
    return tuple(getattr(obj, name) for name in names)


def _set(obj: object, names: tuple[str, ...], texts: tuple[str | None, ...]) -> None:
    for name, text in zip(names, texts, strict=True):
        object.__setattr__(obj, name, text)


def _settle_marks(
    obj: Fix | Finding,
    texts: tuple[str | None, ...],
    store: Callable[[tuple[str | None, ...]], None],
) -> None:
    """Texts written with marked line references are stored rendered, their marked form in
    ``marked``. A ``marked`` passed in (by ``dataclasses.replace``) still gives the marked
    form of each text it renders to; a text changed since is taken as given."""
    prior = obj.marked if obj.marked is not None and len(obj.marked) == len(texts) else None
    written = tuple(
        prior[i] if prior is not None and not has_refs(t) and _plain(prior[i]) == t else t
        for i, t in enumerate(texts)
    )
    if any(has_refs(t) for t in written):
        store(tuple(_plain(t) for t in written))
        object.__setattr__(obj, "marked", written)
    else:
        object.__setattr__(obj, "marked", None)


def _plain(text: str | None) -> str | None:
    return None if text is None else rendered(text)


def message_as_written(f: Finding) -> str:
    """The finding's message with its line references still marked (to build on it)."""
    return f.marked[0] or f.message if f.marked is not None else f.message


def manual_as_written(f: Finding) -> str | None:
    return f.marked[1] if f.marked is not None else f.manual


def review_reason_as_written(fix: Fix) -> str:
    return fix.marked[1] or fix.review_reason if fix.marked is not None else fix.review_reason


@dataclass(frozen=True)
class RuleContext:
    target: Target


@dataclass(frozen=True)
class Rule:
    """One rule: its identity, docs, and detection function.

    ``check`` is a pure function of the parsed script and the context.
    ``hover`` maps qualified API names this rule is about to Markdown text shown on hover.
    """

    code: str
    name: str
    category: Category
    summary: str
    severity: Severity
    check: Callable[[ScriptModel, RuleContext], Iterable[Finding]]
    has_fix: bool
    hover: dict[str, str] = field(default_factory=dict)
    doc: str = ""

    @property
    def doc_anchor(self) -> str:
        return f"{self.code.lower()}-{self.name}"


DOC_BASE = "https://github.com/xla-lens/xla-lens/blob/main/README.md"
# Each rule's page (generated from rules/xlaNNN_<name>.md by ./scripts/gen-readme).
RULE_DOCS = DOC_BASE.rsplit("/", 1)[0] + "/docs/rules"


def doc_url(rule: Rule) -> str:
    return f"{RULE_DOCS}/{rule.code}.md"
