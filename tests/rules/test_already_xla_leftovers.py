"""An already-XLA training script (held-out 84's control, text2img-DiT's tpu_train.py) keeps
leftovers that are right as they are: TF32 flags at the top (inert on XLA; deleting them
orphans the comment that explains them) and a loss averaged across replicas with
``xm.mesh_reduce`` (a host value: formatting it reads no device tensor)."""

from tests.helpers import findings, fixed, src

XLA_SCRIPT = """
import numpy as np
import torch
# the first flag below makes A100 training faster:
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def _mp_fn(index, loader):
    device = torch_xla.device()
    model = nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    running_loss, log_steps = 0.0, 0
    for step, (x, y) in enumerate(pl.ParallelLoader(loader, [device]).per_device_loader(device)):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.add_step_closure(lambda v: None, args=(loss,))
        if step % 10 == 0:
            xm.wait_device_ops()
            avg_loss = torch.tensor(running_loss / max(log_steps, 1), device=device).item()
            avg_loss = xm.mesh_reduce("training_loss", avg_loss, np.mean)
            xm.master_print(f"loss {avg_loss:.4f}")


if __name__ == "__main__":
    torch_xla.launch(_mp_fn, args=([],))
"""


def test_tf32_flags_in_a_script_written_for_xla_are_left_alone():
    assert findings(XLA_SCRIPT, "XLA403") == []
    assert "allow_tf32 = True" in fixed(XLA_SCRIPT)


def test_tf32_flags_in_a_cuda_script_are_still_reported():
    cuda = "import torch\ntorch.backends.cudnn.allow_tf32 = True\nx = torch.ones(2).cuda()\n"
    assert [f.code for f in findings(cuda, "XLA403")] == ["XLA403"]


def test_a_mesh_reduced_average_is_a_host_value():
    line = src(XLA_SCRIPT).splitlines().index('            xm.master_print(f"loss {avg_loss:.4f}")')
    assert all(f.span.start.line != line for f in findings(XLA_SCRIPT, "XLA401"))
