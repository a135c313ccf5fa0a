"""XLA414: packed sequences on the XLA device.

``torch.nn.utils.rnn.pack_padded_sequence`` / ``pack_sequence`` build a ``PackedSequence``. On
the XLA device (torch_xla 2.9, measured on PJRT CPU; ``tests/rules/test_xla414.py``):

- PyTorch's RNNs (``nn.LSTM``, ``nn.RNN``, a bidirectional ``nn.GRU``) fail on one at their
  forward: "The tensor has a non-zero number of elements, but its data is not allocated yet";
  the scan GRU torch_xla puts in place of ``nn.GRU`` rejects it (XLA412);
- the backward of a packed tensor that needs gradients fails the same way
  (``scores = pack_padded_sequence(scores, lengths, batch_first=True).data`` before the loss,
  the image-captioning idiom): the converted script stops at its first ``backward()``.

Packing data that needs no gradient (the targets beside those scores, or scores under
``torch.no_grad()``) works, and is left alone: a call whose packed value is named like targets,
labels or token ids, or that runs without gradients, and whose result goes to no call. Reported at the other pack calls, in a script a conversion moves to the XLA device (or
one importing torch_xla). No fix: padded tensors and a mask (or ``gather`` of each sequence's
last valid step) replace the packing, which also keeps one graph for every batch; where packing
must stay, that part runs on the CPU.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ..semantic.device_intent import being_converted, hand_written_xla
from ..semantic.model import ScriptModel
from .base import Category, Finding, Rule, RuleContext, Severity
from .parts.eval_loops import grad_off

CODE = "XLA414"
PACKERS = frozenset({"torch.nn.utils.rnn.pack_padded_sequence", "torch.nn.utils.rnn.pack_sequence"})
# What is packed without gradients: the targets of a loss (``caps_sorted[:, 1:]``, ``labels``).
NO_GRADIENT = re.compile(r"target|label|caps|captions|ids|tokens|gold|mask", re.IGNORECASE)
MESSAGE = (
    "{call} on the XLA device: PyTorch's RNNs fail on a PackedSequence there, and so does the "
    'backward of a packed tensor that needs gradients (torch_xla 2.9, measured: "The tensor '
    'has a non-zero number of elements, but its data is not allocated yet"){where}'
)
MANUAL = (
    "Feed the RNN (or the loss) padded tensors instead: drop the packing, mask the padded steps "
    "(a per-step 0/1 mask in the loss, or `gather` of each sequence's last valid output), which "
    "also keeps one graph for every batch; or run the packed part on the CPU."
)


def _root_name(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _fed_to_a_call(model: ScriptModel, call: ast.Call) -> bool:
    """The packed sequence goes into a call (``self.lstm(packed)``), directly or by name."""
    parent = model.parent(call)
    if isinstance(parent, ast.Call) and call in parent.args:
        return True
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1):
        return False
    target = parent.targets[0]
    if not isinstance(target, ast.Name):
        return False
    scope = model.enclosing_function(call) or model.tree
    return any(
        isinstance(n, ast.Call)
        and any(isinstance(a, ast.Name) and a.id == target.id for a in n.args)
        for n in model.walk_scope(scope)
    )


def _needs_no_gradient(model: ScriptModel, call: ast.Call) -> bool:
    """Packed for a loss or a metric without a backward through it: named like targets, or
    under ``torch.no_grad()`` (the captioning script's validation packs its scores there)."""
    if not call.args or _fed_to_a_call(model, call):
        return False
    return bool(NO_GRADIENT.search(_root_name(call.args[0]))) or grad_off(model, call)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    calls = list(model.calls_to(*PACKERS))
    if not calls:
        return
    converting = being_converted(model) and not hand_written_xla(model)
    if not converting and not model.uses_torch_xla:
        return
    for call in calls:
        if _needs_no_gradient(model, call):
            continue
        where = (
            ": this one goes into a call (an RNN's forward)" if _fed_to_a_call(model, call) else ""
        )
        yield Finding(
            CODE,
            MESSAGE.format(call=f"`{model.segment(call.func)}(...)`", where=where),
            model.span(call),
            Severity.WARNING,
            manual=MANUAL,
        )


HOVER = """\
**XLA414 · packed sequences fail on the XLA device**

On torch_xla 2.9 PyTorch's RNNs fail on a `PackedSequence`, and the backward of a packed tensor
that needs gradients fails too ("... data is not allocated yet"). Pad, and mask the padded steps.
"""

RULE = Rule(
    code=CODE,
    name="packed-sequence",
    category=Category.CONVERSION,
    summary="pack_padded_sequence / pack_sequence on the XLA device: RNNs and backward fail on "
    "packed tensors → pad and mask instead",
    severity=Severity.WARNING,
    check=check,
    has_fix=False,
    hover={p: HOVER for p in PACKERS},
)
