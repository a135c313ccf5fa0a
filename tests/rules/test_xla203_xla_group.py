"""XLA203 where an XLA process group exists before the sampler. Under torchrun on XLA (the
"xla" backend, env:// or xla:// rendezvous) each process is one replica and the group numbers
them, so ``DistributedSampler(ds)`` needs nothing and nothing is reported. Under the XLA
launcher an xla:// group in each replica is reported with what goes wrong where replicas are
threads of one process. Scripts still being converted, and samplers built before the group
exists, keep the usual finding."""

from __future__ import annotations

from tests.helpers import findings

# Started by `torchrun --nproc_per_node=4`; written for XLA by hand.
TORCHRUN_XLA = """
import torch
import torch.distributed as dist
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group({init_args})
    device = torch_xla.device()
    data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, shuffle=False)
    model = torch.nn.Linear(8, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in pl.MpDeviceLoader(loader, device):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        xm.optimizer_step(optimizer)


if __name__ == "__main__":
    main()
"""


def _sampler_findings(code: str) -> list:
    return [f for f in findings(code, "XLA203") if "DistributedSampler without" in f.message]


def test_torchrun_with_the_xla_backend_reports_nothing():
    for init_args in ('"xla"', '"xla", init_method="xla://"', 'backend="xla"'):
        code = TORCHRUN_XLA.replace("{init_args}", init_args)
        assert findings(code, "XLA203") == [], init_args


def test_torchrun_with_the_backend_in_a_local_name_reports_nothing():
    code = TORCHRUN_XLA.replace(
        "    dist.init_process_group({init_args})",
        '    backend = "xla"\n    dist.init_process_group(backend)',
    )
    assert findings(code, "XLA203") == []


def test_torchrun_group_built_in_a_helper_called_first_reports_nothing():
    code = TORCHRUN_XLA.replace(
        "def main():\n    dist.init_process_group({init_args})",
        'def setup():\n    dist.init_process_group("xla")\n\n\ndef main():\n    setup()',
    )
    assert findings(code, "XLA203") == []


def test_torchrun_group_at_module_level_reports_nothing():
    code = TORCHRUN_XLA.replace("    dist.init_process_group({init_args})\n", "").replace(
        "\n\ndef main():", '\ndist.init_process_group("xla")\n\n\ndef main():'
    )
    assert findings(code, "XLA203") == []


def test_sampler_built_before_the_group_is_reported():
    code = TORCHRUN_XLA.replace("    dist.init_process_group({init_args})\n", "").replace(
        "    loader = DataLoader(",
        '    dist.init_process_group("xla")\n    loader = DataLoader(',
    )
    (f,) = _sampler_findings(code)
    assert f.span.start.line + 1 == 14
    assert "(line 15) is not built yet" in f.message


def test_torchrun_group_on_another_backend_is_reported():
    code = TORCHRUN_XLA.replace("{init_args}", '"gloo"')
    assert len(_sampler_findings(code)) == 1


# The XLA launcher: each replica builds the xla:// group, then its loader.
LAUNCHED = """
import torch
import torch.distributed as dist
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def build_loader(batch_size):
    data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    return DataLoader(data, batch_size=batch_size, sampler=DistributedSampler(data))


class Trainer:
    def __init__(self, device):
        self.device = device
        self.loader = self._loader()

    def _loader(self):
        data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
        return DataLoader(data, batch_size=8, sampler=DistributedSampler(data))


def _mp_fn(index):
    {init}
    device = torch_xla.device()
    loader = pl.MpDeviceLoader(build_loader(8), device)
    trainer = Trainer(device)
    model = torch.nn.Linear(8, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        xm.optimizer_step(optimizer)


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
"""


def test_launcher_with_an_xla_group_first_says_threaded_replicas_share_it():
    # Each replica's xla:// group numbers it as the runtime does only when it is a process of
    # its own; replicas run as threads of one process share the default group (proven by
    # running: tests/conversions/test_xla_group_sampler.py). The fix is the runtime's values.
    code = LAUNCHED.replace("{init}", 'dist.init_process_group("xla", init_method="xla://")')
    found = _sampler_findings(code)
    assert len(found) == 2
    for f in found:
        assert "xla:// process group (line 27)" in f.message
        assert "threads of one process" in f.message and "same rank" in f.message
        assert f.fix is not None and f.fix.safe


def test_launcher_without_a_group_is_reported():
    code = LAUNCHED.replace("{init}", "pass")
    assert len(_sampler_findings(code)) == 2


def test_launcher_with_an_env_rendezvous_is_reported():
    # torch_xla.launch sets no MASTER_ADDR/RANK/WORLD_SIZE: only xla:// asks the XLA runtime.
    code = LAUNCHED.replace("{init}", 'dist.init_process_group("xla")')
    assert len(_sampler_findings(code)) == 2


def test_launcher_with_the_group_built_only_in_the_parent_is_reported():
    code = LAUNCHED.replace("{init}", "pass").replace(
        "    torch_xla.launch(_mp_fn)",
        '    dist.init_process_group("xla", init_method="xla://")\n    torch_xla.launch(_mp_fn)',
    )
    assert len(_sampler_findings(code)) == 2


def test_sampler_helper_also_called_before_the_group_is_reported():
    code = LAUNCHED.replace("{init}", 'dist.init_process_group("xla", init_method="xla://")')
    code = code.replace(
        "def _mp_fn(index):\n",
        "def _mp_fn(index):\n    probe = build_loader(1)\n",
    )
    first, second = _sampler_findings(code)
    assert first.span.start.line + 1 == 13
    assert "process group (line 28) is not built yet" in first.message
    assert "threads of one process" in second.message


def test_cuda_script_being_converted_keeps_the_finding():
    # An nccl group made "xla" by XLA205, a CUDA device: still a conversion in progress.
    code = """
    import torch
    import torch.distributed as dist
    from torch.utils.data.distributed import DistributedSampler

    def main():
        dist.init_process_group("xla", init_method="xla://")
        model = torch.nn.Linear(8, 1).cuda()
        sampler = DistributedSampler(ds)
    """
    assert len(_sampler_findings(code)) == 1


def test_shuffle_with_a_sampler_is_still_reported_on_an_xla_script():
    code = TORCHRUN_XLA.replace("{init_args}", '"xla"').replace(
        "sampler=sampler, shuffle=False", "sampler=sampler, shuffle=True"
    )
    (f,) = findings(code, "XLA203")
    assert "shuffle=True raises ValueError" in f.message


def test_group_before_the_sampler_under_another_launcher_keeps_the_usual_message():
    code = (
        TORCHRUN_XLA.replace("{init_args}", '"xla"')
        .replace("    main()\n", "    torch.multiprocessing.spawn(main, nprocs=2)\n")
        .replace("def main():", "def main(index):")
    )
    (f,) = _sampler_findings(code)
    assert "not built yet" not in f.message and "process group (line 12)" in f.message
