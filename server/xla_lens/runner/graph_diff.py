"""Explains a recompilation at its cause: diffs the graph of a new compile against the nearest
earlier graph synced at the same line (pure: text in, explanations out).

Input: the graphs of ``hlo_dump.parse_dump`` (re-exported here), one per synced graph.

What changed is, in order of precedence: the op sequence (a Python branch), a shape (the batch
size; a data-dependent op), a constant or attribute (a Python number baked into the graph). A
shape change also changes derived constants (element counts), so shapes win over constants.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from .hlo_dump import Graph, Node, split_parens
from .hlo_dump import parse_dump as parse_dump  # part of this module's API

DOC_BASE = "https://github.com/xla-lens/xla-lens/blob/main/README.md"
# The rules' own pages (rules.base.doc_url; the runner does not import rules, a test keeps them
# equal) and, for constants, which no static rule covers, the README's runner section.
RULE_DOCS = DOC_BASE.rsplit("/", 1)[0] + "/docs/rules"
DOC_URLS = {
    "shape": f"{RULE_DOCS}/XLA402.md",
    "branch": f"{RULE_DOCS}/XLA404.md",
    "constant": f"{DOC_BASE}#recompilations-explained",
}
HINTS = {
    "shape-input": "the batch size changes: drop the ragged last batch "
    "(DataLoader(..., drop_last=True)) or pad every batch to a fixed size",
    "shape-data": "a data-dependent shape: keep shapes fixed (a mask with torch.where instead "
    "of indexing, nonzero or masked_select) or pad to a fixed size",
    "shape-size": "a size given as a Python number changes between steps: keep it fixed, or "
    "pad to a fixed size (drop_last=True when it follows the batch)",
    "constant": "a Python number is baked into the graph and changes every step: keep it on "
    "the device as a tensor (torch.tensor(v, device=device), index_select with a device index) "
    "or keep it fixed",
    "branch": "Python control flow traces different ops per step: compute both sides and pick "
    "with torch.where, or take the branch outside the traced step",
}

NEAREST_OF = 4  # earlier graphs of a trigger line a new graph is compared with
# Ops whose output shape depends on tensor values, not on Python sizes.
_DATA_DEPENDENT = ("aten::nonzero", "aten::masked_select", "aten::unique2", "aten::index")


@dataclass
class Change:
    kind: str  # "shape" | "constant" | "branch"
    changed: str  # f32[8,12] → f32[7,12]; slice {[0:8]} → {[2:10]}; aten::mul → aten::relu
    cause: Node | None  # the first differing node located in the user's files
    headline: str  # "input shape f32[8,12] → f32[7,12]"
    hint: str
    doc_url: str


@dataclass
class Explanation:
    """One recompilation at a trigger line, explained at its cause line."""

    trigger_file: str
    trigger_line: int
    step: int
    graph_hash: str
    previous_hash: str
    change: Change
    # Diffed against the line's first graph, which often also holds one-off initialisation.
    against_first: bool = False


def _key(node: Node) -> tuple[object, ...]:
    # What makes two nodes "the same op": not their shape or constant, which may change.
    return (node.opcode, node.op_type, node.file, node.line, len(node.operands))


def diff_graphs(old: Graph, new: Graph, is_user: Callable[[str], bool]) -> Change | None:
    """What changed from ``old`` to ``new``; None when nothing visible in the dump differs."""
    blocks = SequenceMatcher(
        None, [_key(n) for n in old.nodes], [_key(n) for n in new.nodes], autojunk=False
    ).get_opcodes()
    removed = [n for tag, i1, i2, _, _ in blocks if tag != "equal" for n in old.nodes[i1:i2]]
    added = [n for tag, _, _, j1, j2 in blocks if tag != "equal" for n in new.nodes[j1:j2]]
    # Only inputs added is warm-up, not a branch: a value the old graph computed (a tensor
    # initialised before the loop, optimizer state) is an input now. It happens once; the
    # nodes both graphs share may still differ in shape or constants.
    if not all(n.is_input or n.opcode == "tuple" for n in added):
        return _branch(removed, added, is_user)
    pairs = [
        (old.nodes[i1 + k], new.nodes[j1 + k])
        for tag, i1, i2, j1, _ in blocks
        if tag == "equal"
        for k in range(i2 - i1)
    ]
    reshaped = [(a, b) for a, b in pairs if a.shape != b.shape]
    if reshaped:
        return _shape(reshaped, {b.name for _, b in reshaped}, is_user)
    edited = [(a, b) for a, b in pairs if (a.value, a.attrs) != (b.value, b.attrs)]
    if edited:
        return _constant(edited, is_user)
    return None


def _user_first(nodes: Iterable[Node], is_user: Callable[[str], bool]) -> Node | None:
    return next((n for n in nodes if n.file and n.line and is_user(n.file)), None)


def _branch(removed: list[Node], added: list[Node], is_user) -> Change:
    ops = [n for n in added if not n.is_input]
    cause = _user_first(ops, is_user) or _user_first(added, is_user)
    noise = ("prim::Constant", "xla::device_data", "")
    gone = _unique(n.label() for n in removed if n.op_type not in noise)
    new = _unique(n.label() for n in added if n.op_type not in noise)
    gone, new = [g for g in gone if g not in new], [n for n in new if n not in gone]
    if gone and new:
        changed = f"{', '.join(gone[:2])} → {', '.join(new[:2])}"
    elif new:
        changed = f"ops added: {', '.join(new[:3])}"
    elif gone:
        changed = f"ops removed: {', '.join(gone[:3])}"
    else:
        changed = f"{len(removed)} ops → {len(added)} ops"
    return Change(
        "branch", changed, cause, f"op sequence {changed}", HINTS["branch"], _doc("branch")
    )


def _shape(reshaped: list[tuple[Node, Node]], changed_names: set[str], is_user) -> Change:
    # The origin of a shape change: a node whose shape changed while its operands' did not (an
    # input, or an op such as nonzero). Everything downstream merely inherits it.
    origins = [(a, b) for a, b in reshaped if not any(o in changed_names for o in b.operands)]
    inputs = [p for p in origins if p[1].is_input]
    ranked = inputs + [p for p in origins if not p[1].is_input] + reshaped
    user = next((p for p in ranked if p[1].file and p[1].line and is_user(p[1].file)), None)
    origin = user or ranked[0]
    cause = origin[1] if user else None
    if origin[1].is_input:
        changed = f"{origin[0].shape} → {origin[1].shape}"
        return Change(
            "shape", changed, cause, f"input shape {changed}", HINTS["shape-input"], _doc("shape")
        )
    # An op lowers to several HLO nodes (randn: an RNG state, then the values): describe the
    # op's result, its last non-tuple node, as the user sees the tensor.
    same_op = [
        p
        for p in reshaped
        if (p[1].op_type, p[1].file, p[1].line)
        == (origin[1].op_type, origin[1].file, origin[1].line)
        and not p[1].shape.startswith("(")
    ]
    old, new = same_op[-1] if same_op else origin
    changed = f"{old.shape} → {new.shape}"
    hint = HINTS["shape-data"] if new.op_type in _DATA_DEPENDENT else HINTS["shape-size"]
    return Change("shape", changed, cause, f"shape {changed} ({new.label()})", hint, _doc("shape"))


def _constant(edited: list[tuple[Node, Node]], is_user) -> Change:
    user = next((p for p in edited if p[1].file and p[1].line and is_user(p[1].file)), None)
    old, new = user or edited[0]
    if old.value != new.value:
        changed = f"{new.label()} {old.value} → {new.value}"
    else:
        changed = f"{old.attrs} → {new.attrs}"
        name = _common_attr_name(old.attrs, new.attrs)
        if name:
            before, after = _attr_value(old.attrs, name), _attr_value(new.attrs, name)
            changed = f"{name} {_compact(before)} → {_compact(after)}"
    cause = new if user else None
    return Change(
        "constant",
        changed,
        cause,
        f"Python constant {changed}",
        HINTS["constant"],
        _doc("constant"),
    )


def _compact(value: str) -> str:
    # slice={[2:10], [0:4]} reads as [2:10, 0:4]
    if value.startswith("{[") and value.endswith("]}"):
        return "[" + ", ".join(part.strip("[] ") for part in value[1:-1].split(",")) + "]"
    return value


def _common_attr_name(a: str, b: str) -> str:
    for name in re.findall(r"(\w+)=", a):
        if _attr_value(a, name) != _attr_value(b, name):
            return name
    return ""


def _attr_value(attrs: str, name: str) -> str:
    m = re.search(rf"\b{name}=", attrs)
    if not m:
        return ""
    rest = attrs[m.end() :]
    if rest.startswith("{"):
        inner, _ = split_parens(rest[1:])
        return f"{{{inner}}}"
    return rest.split(",", 1)[0].strip()


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _doc(kind: str) -> str:
    return DOC_URLS[kind]


def _distance(old: Graph, new: Graph) -> tuple[int, int]:
    sm = SequenceMatcher(
        None, [_key(n) for n in old.nodes], [_key(n) for n in new.nodes], autojunk=False
    )
    matched = sum(size for *_, size in sm.get_matching_blocks())
    unmatched = len(old.nodes) + len(new.nodes) - 2 * matched
    differing = 0
    for a_start, b_start, size in sm.get_matching_blocks():
        for k in range(size):
            a, b = old.nodes[a_start + k], new.nodes[b_start + k]
            differing += (a.shape, a.value, a.attrs) != (b.shape, b.value, b.attrs)
    return unmatched, differing


@dataclass
class CompileSite:
    """One uncached compile as the runner saw it: its graph and the user line that synced."""

    graph_hash: str
    file: str | None
    line: int | None
    step: int


def explain(
    compiles: Sequence[CompileSite],
    graphs: Sequence[Graph],
    is_user: Callable[[str], bool],
) -> list[Explanation]:
    """Every recompilation (a compile after the first at its trigger line) whose graph differs
    from the nearest earlier graph of that line at a node in the user's files."""
    by_hash = {g.graph_hash: g for g in graphs}
    seen: dict[tuple[str, int], list[Graph]] = {}
    out: list[Explanation] = []
    for site in compiles:
        graph = by_hash.get(site.graph_hash)
        if site.file is None or site.line is None or graph is None:
            continue
        earlier = seen.setdefault((site.file, site.line), [])
        if any(g.graph_hash == graph.graph_hash for g in earlier):
            continue
        if earlier:
            # Nearest = fewest differences; on a tie the latest, the likeliest predecessor.
            # Only the last few are compared: a diff of big graphs costs tens of ms.
            best = min(reversed(earlier[-NEAREST_OF:]), key=lambda g: _distance(g, graph))
            change = diff_graphs(best, graph, is_user)
            if change is not None and change.cause is not None:
                ex = Explanation(
                    site.file, site.line, site.step, graph.graph_hash, best.graph_hash, change
                )
                ex.against_first = best is earlier[0]
                out.append(ex)
        earlier.append(graph)
    return out


def summarize(
    explanations: Sequence[Explanation],
) -> dict[tuple[str, int], tuple[Explanation, int]]:
    """Per trigger line: the most frequent explanation (kind and cause line) and how many
    recompilations it explains; on a tie one not made against the line's first graph, then the
    earliest."""
    out: dict[tuple[str, int], tuple[Explanation, int]] = {}
    by_trigger: dict[tuple[str, int], list[Explanation]] = {}
    for ex in explanations:
        by_trigger.setdefault((ex.trigger_file, ex.trigger_line), []).append(ex)
    for trigger, items in by_trigger.items():
        counts = Counter(_cause_key(ex) for ex in items)
        best = min(items, key=lambda ex: (-counts[_cause_key(ex)], ex.against_first, ex.step))
        out[trigger] = (best, counts[_cause_key(best)])
    return out


def _cause_key(ex: Explanation) -> tuple[object, ...]:
    cause = ex.change.cause
    return (ex.change.kind, cause.file if cause else None, cause.line if cause else None)


def compile_sites(graphs: Sequence[Graph], is_user: Callable[[str], bool]) -> list[CompileSite]:
    """The compiles a dump implies on its own (each graph hash's first sync; the step is the
    sync's 1-based index): for reading a dump without the runner's compile events."""
    out: list[CompileSite] = []
    seen: set[str] = set()
    for index, graph in enumerate(graphs, start=1):
        if graph.graph_hash in seen:
            continue
        seen.add(graph.graph_hash)
        frame = next((f for f in graph.frames if is_user(f.file)), None)
        out.append(
            CompileSite(
                graph.graph_hash,
                frame.file if frame else None,
                frame.line if frame else None,
                index,
            )
        )
    return out
