"""XLA412: ``import torch_xla`` replaces ``torch.nn.GRU`` with torch_xla's scan-based GRU.

torch_xla 2.9 patches ``torch.nn`` when it is imported (``torch_xla/_patched_functions.py``:
``nn.GRU = ScanGRU``). Every GRU built after that import is ``torch_xla.experimental.gru.GRU``,
which differs from PyTorch's (measured on torch_xla 2.9, PJRT CPU):

- it takes XLA tensors only: the same GRU run on CPU tensors fails with "Expected all tensors
  in the given list to be XLA tensors". A converted script that keeps a CPU path (its default
  without ``--cuda``, generation or evaluation on the CPU) used to run there and now fails
  (held-out 169, char-rnn: the import a conversion adds broke the script's default run);
- it rejects ``PackedSequence`` input (``AssertionError: PackedSequence is not supported``),
  on the XLA device too: a ``pack_padded_sequence`` seq2seq encoder fails at its first step.

A bidirectional GRU falls back to PyTorch's class and is left alone. Reported where the GRU is
built: in this script, or at the script's construction of a workspace class whose methods build
one (the class's module is read, never imported), only in a script a conversion moves to the
XLA device (or one already importing torch_xla that packs sequences). No fix: which tensors
the GRU sees is the script's design; ``torch.nn.GRU._orig`` is PyTorch's class where a GRU must
run on the CPU.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.device_intent import being_converted, hand_written_xla
from ..semantic.model import ScriptModel
from ..semantic.node_helpers import dotted
from ..semantic.workspace_classes import ClassRef, built, chain
from .base import Category, Finding, Rule, RuleContext, Severity
from .parts.library_autocast import display_path

CODE = "XLA412"
GRU_NAMES = frozenset({"torch.nn.GRU", "torch.nn.modules.rnn.GRU"})
PACKERS = frozenset(
    {
        "torch.nn.utils.rnn.pack_padded_sequence",
        "torch.nn.utils.rnn.pack_sequence",
    }
)
CPU_ONLY = (
    "it takes XLA tensors only, so any run of it on CPU tensors (a CPU fallback path, "
    'generation or evaluation on the CPU) fails with "Expected all tensors ... to be XLA '
    'tensors"'
)
PACKED = (
    "it rejects PackedSequence input (AssertionError), on the XLA device too, and this script "
    "packs sequences (`{packer}`, line {line})"
)
MANUAL = (
    "Run every GRU on the XLA device. Where one must run on the CPU, build it with PyTorch's "
    "class, `getattr(torch.nn.GRU, '_orig', torch.nn.GRU)(...)` (torch_xla keeps it there)."
)
MANUAL_PACKED = (
    "Feed the GRU plain padded tensors: drop pack_padded_sequence and mask the padded steps "
    "(or take each sequence's last valid output with `gather`), which also keeps one graph "
    "for every batch (PyTorch's own GRU, `torch.nn.GRU._orig`, fails on packed XLA input "
    "too: measured)."
)


def _bidirectional(call: ast.Call) -> bool:
    return any(
        k.arg == "bidirectional" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in call.keywords
    )


def _module_builds_gru(ref: ClassRef) -> ast.Call | None:
    """A GRU built in a method of ``ref``'s class chain (``nn.GRU(...)``, ``torch.nn.GRU``,
    or ``GRU`` imported from ``torch.nn``)."""
    for cls in chain(ref):
        imported = {
            a.asname or a.name
            for n in cls.module.tree.body
            if isinstance(n, ast.ImportFrom) and n.module in {"torch.nn", "torch.nn.modules.rnn"}
            for a in n.names
            if a.name == "GRU"
        }
        for node in ast.walk(cls.node):
            if not isinstance(node, ast.Call) or _bidirectional(node):
                continue
            name = dotted(node.func)
            if name in {"nn.GRU", "torch.nn.GRU"} or name in imported:
                return node
    return None


LIBRARY_ROOTS = frozenset(
    {"torch", "torchvision", "torchaudio", "transformers", "numpy", "torch_xla", "timm"}
)


def _may_build_a_project_class(model: ScriptModel, call: ast.Call) -> bool:
    """A constructor (a capitalised name) that no library import resolves: the only calls
    worth reading another module for (a 2,000-line script makes thousands of calls)."""
    func = call.func
    name = (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )
    if not name[:1].isupper():
        return False
    qualname = model.call_name(call)
    return qualname is None or qualname.split(".")[0] not in LIBRARY_ROOTS


def _packer(model: ScriptModel) -> ast.Call | None:
    return next(iter(model.calls_to(*PACKERS)), None)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    packer = _packer(model)
    converting = being_converted(model) and not hand_written_xla(model)
    if not converting and not (model.uses_torch_xla and packer is not None):
        return
    why = (
        PACKED.format(packer=model.segment(packer.func), line=packer.lineno)
        if packer is not None
        else CPU_ONLY
    )
    manual = MANUAL_PACKED if packer is not None else MANUAL
    lead = (
        "once the converted script imports torch_xla" if converting else "with torch_xla imported"
    )
    for call in model.calls:
        if model.call_name(call) in GRU_NAMES and not _bidirectional(call):
            yield Finding(
                CODE,
                f"{lead}, torch.nn.GRU is torch_xla's scan-based GRU: {why}",
                model.span(call),
                Severity.WARNING,
                manual=manual,
            )
            continue
        if model.path.startswith("<") or not _may_build_a_project_class(model, call):
            continue
        for ref in built(model, call):
            if ref.path == model.path:
                continue
            gru = _module_builds_gru(ref)
            if gru is not None:
                where = f"{display_path(model.path, ref.path)} line {gru.lineno}"
                yield Finding(
                    CODE,
                    f"`{model.segment(call.func)}(...)` builds a torch.nn.GRU ({where}); {lead}, "
                    f"that is torch_xla's scan-based GRU: {why}",
                    model.span(call),
                    Severity.WARNING,
                    manual=manual,
                )
                break


HOVER = """\
**XLA412 · torch_xla replaces torch.nn.GRU**

`import torch_xla` (2.9) sets `torch.nn.GRU` to `torch_xla.experimental.gru.GRU`, a scan-based
GRU: XLA tensors only (a CPU run fails), no `PackedSequence` input. `torch.nn.GRU._orig` is
PyTorch's class.
"""

RULE = Rule(
    code=CODE,
    name="patched-gru",
    category=Category.CONVERSION,
    summary="torch.nn.GRU becomes torch_xla's scan-based GRU once torch_xla is imported: XLA "
    "tensors only, no PackedSequence → run it on the XLA device with padded tensors",
    severity=Severity.WARNING,
    check=check,
    has_fix=False,
    hover={"torch.nn.GRU": HOVER},
)
