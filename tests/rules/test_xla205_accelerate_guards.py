"""XLA205 on a torch.distributed collective an accelerate script runs only under
``torch.distributed.is_initialized()`` (held-out 48's Omega-Net early stop): on XLA accelerate
starts no torch.distributed group (verified on PJRT CPU: ``is_initialized()`` is False after
``Accelerator()``), so the broadcast never runs there. Advice naming accelerate's operation."""

from tests.helpers import findings

CODE = """
import torch
from accelerate import Accelerator

accelerator = Accelerator()


def should_stop(flag):
    stop = torch.tensor(int(flag), device=accelerator.device)
    if torch.distributed.is_initialized():
        torch.distributed.broadcast(stop, src=0)
        torch.distributed.barrier()
    torch.distributed.all_reduce(stop)
    return stop.item() == 1
"""


def test_guarded_collectives_in_an_accelerate_script_are_reported():
    found = [f for f in findings(CODE, "XLA205") if "runs only when" in f.message]
    assert [f.message.split("(")[0] for f in found] == ["broadcast", "barrier"]
    assert all(f.fix is None for f in found)
    assert "accelerate.utils.broadcast(tensor, from_process=0)" in found[0].manual
    assert "accelerator.wait_for_everyone()" in found[1].manual


def test_without_accelerate_the_guard_is_the_scripts_own_business():
    plain = CODE.replace("from accelerate import Accelerator\n", "").replace(
        "accelerator = Accelerator()\n", "class accelerator:\n    device = 'cpu'\n"
    )
    assert not [f for f in findings(plain, "XLA205") if "runs only when" in f.message]
