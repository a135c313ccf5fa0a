"""XLA119 on torch_xla's sync-free optimizers: they subclass torch.optim's and take fused= too,
so XLA104's class swap keeps a fused=True that raises at the first step (run with torch_xla
2.9). A converted script must still be told, not come back clean."""

from tests.helpers import findings, fixed, src

SYNCFREE_LITERAL = """
import torch
import torch_xla
from torch_xla.amp.syncfree import AdamW

device = torch_xla.device()
model = torch.nn.Linear(4, 1).to(device)
opt = AdamW(model.parameters(), lr=1e-3, fused=True)
"""

SYNCFREE_DICT = """
import inspect
import torch
import torch_xla
import torch_xla.amp.syncfree

device = torch_xla.device()
model = torch.nn.Linear(4, 1).to(device)
fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
extra_args = dict(fused=True) if fused_available else dict()
opt = torch_xla.amp.syncfree.AdamW(model.parameters(), lr=1e-3, **extra_args)
"""

AMP_SCRIPT = """
import torch

device = torch.device("cuda")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
scaler = torch.cuda.amp.GradScaler()
for x in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x.to(device)).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
"""


def test_fused_true_on_a_syncfree_optimizer_is_reported_as_raising_at_its_first_step():
    (f,) = findings(SYNCFREE_LITERAL, "XLA119")
    assert f.span.start.line == 6
    assert "AdamW(fused=True) has no XLA kernel" in f.message
    assert "at its first step" in f.message and "when it is built" not in f.message
    assert "fused=True" not in fixed(SYNCFREE_LITERAL, "XLA119", unsafe=True)


def test_fused_true_through_a_dict_into_a_syncfree_optimizer_is_reported():
    (f,) = findings(SYNCFREE_DICT, "XLA119")
    assert f.span.start.line == 8  # the dict entry
    assert "torch_xla.amp.syncfree.AdamW" in f.message and "at its first step" in f.message


def test_torch_optim_keeps_saying_it_raises_when_built():
    (f,) = findings(
        SYNCFREE_LITERAL.replace(
            "from torch_xla.amp.syncfree import AdamW", "from torch.optim import AdamW"
        ),
        "XLA119",
    )
    assert "when it is built" in f.message


def test_a_converted_amp_script_still_reports_a_fused_syncfree_optimizer():
    out = fixed(AMP_SCRIPT, unsafe=True)
    # Whatever the fixes did with the optimizer, fused=True is never left silently behind.
    assert "fused=True" not in out or findings(out, "XLA119")
    out_safe = fixed(AMP_SCRIPT)
    assert "fused=True" not in out_safe or findings(out_safe, "XLA119")
    assert src(AMP_SCRIPT) != out_safe
