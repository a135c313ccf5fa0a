from pathlib import Path

import pytest
from xla_lens.engine import fix_source

from tests.helpers import findings, fixed, src

AMP_DDP = """
import torch
import torch_xla.distributed.xla_multiprocessing as xmp
from torch.cuda.amp import GradScaler as Scaler

scaler = Scaler()
for x in loader:
    optimizer.zero_grad()
    loss = model(x).sum()
    scaler.scale(loss).backward()  # scaled
    scaler.step(optimizer)
    scaler.update()
"""


def test_modern_fix_reduces_gradients_after_backward():
    (f,) = findings(AMP_DDP, "XLA201")
    assert f.span.start.line == 8
    assert fixed(AMP_DDP, "XLA201") == src(AMP_DDP).replace(
        "from torch.cuda.amp import GradScaler as Scaler\n",
        "from torch.cuda.amp import GradScaler as Scaler\nimport torch_xla.core.xla_model as xm\n",
    ).replace(
        "    scaler.scale(loss).backward()  # scaled\n",
        "    scaler.scale(loss).backward()  # scaled\n    xm.reduce_gradients(optimizer)\n",
    )


AMP_DDP_LAUNCHED = """
import torch
import torch_xla.distributed.xla_multiprocessing as xmp
from torch.cuda.amp import GradScaler as Scaler


def _mp_fn(index):
    scaler = Scaler()
    for x in loader:
        optimizer.zero_grad()
        loss = model(x).sum()
        scaler.scale(loss).backward()  # scaled
        scaler.step(optimizer)
        scaler.update()


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
"""


def test_legacy_fix_is_the_guides_fetch_and_all_reduce():
    # In the function each replica runs: at module level ``xm.xrt_world_size()`` would run
    # in the launcher's parent process, and the fix is a review there.
    out = fixed(AMP_DDP_LAUNCHED, "XLA201", target="legacy")
    assert (
        "        scaler.scale(loss).backward()  # scaled\n"
        "        gradients = xm._fetch_gradients(optimizer)\n"
        '        xm.all_reduce("sum", gradients, scale=1.0 / xm.xrt_world_size())\n'
        "        scaler.step(optimizer)\n"
    ) in out
    assert findings(out, "XLA201", target="legacy") == []
    (parent,) = findings(AMP_DDP, "XLA201", target="legacy")
    assert not parent.fix.safe and "parent process" in parent.fix.review_reason


def test_step_function_and_existing_xm_alias():
    code = """
    import torch.distributed as dist
    import torch_xla.core.xla_model as XM

    def train_step(batch, opt):
        with torch.autocast("xla"):
            loss = model(batch)
        self.scaler.scale(loss).backward()
        self.scaler.step(opt)
        self.scaler.update()

    dist.init_process_group("xla")
    for b in loader:
        train_step(b, opt)
    """
    out = fixed(code, "XLA201")
    assert "    self.scaler.scale(loss).backward()\n    XM.reduce_gradients(opt)\n" in out


def test_without_scaler_step_there_is_no_automatic_fix():
    code = """
    import torch.distributed as dist
    import torch
    scaler = torch.amp.GradScaler("cuda")
    dist.init_process_group("xla")
    for x in loader:
        scaler.scale(model(x)).backward()
        step_somehow(scaler)
    """
    (f,) = findings(code, "XLA201")
    assert f.fix is None and "reduce_gradients" in f.manual


def test_reduced_single_device_and_plain_backward_report_nothing():
    reduced = AMP_DDP.replace(
        "    scaler.step(optimizer)\n",
        "    xm.reduce_gradients(optimizer)\n    scaler.step(optimizer)\n",
    ).replace("import torch\n", "import torch\nimport torch_xla.core.xla_model as xm\n")
    assert findings(reduced, "XLA201") == []
    single = AMP_DDP.replace("import torch_xla.distributed.xla_multiprocessing as xmp\n", "")
    assert findings(single, "XLA201") == []
    plain = """
    import torch.distributed as dist
    dist.init_process_group("xla")
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
    """
    assert findings(plain, "XLA201") == []


XLA103 = Path(__file__).parents[2] / "server/xla_lens/rules/xla103_grad_scaler.py"


@pytest.mark.skipif(not XLA103.exists(), reason="XLA103 is not written yet")
def test_composes_with_xla103_removing_the_scaler_in_one_pass():
    accept = {"XLA103", "XLA201"}
    out = fix_source(src(AMP_DDP), target="modern", accept=lambda f: f.code in accept)
    assert out.error is None
    assert "    loss.backward()  # scaled\n    xm.reduce_gradients(optimizer)\n" in out.source
    assert findings(out.source, "XLA201") == []


def test_backward_in_a_one_line_suite_has_no_automatic_fix():
    code = """
    import torch.distributed as dist
    dist.init_process_group("xla")
    for x in loader:
        if use_amp: scaler.scale(model(x)).backward()
        scaler.step(optimizer)
    """
    (f,) = findings(code, "XLA201")
    assert f.fix is None and f.manual
