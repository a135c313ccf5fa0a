"""XLA204 converting ``mp.spawn(run, nprocs=n_gpus, args=(n_gpus, ...))`` where ``n_gpus`` is
``torch.cuda.device_count()``: the launched function takes it as its world size, and on an XLA
host (no CUDA) it is 0. Carried into ``torch_xla.launch(run, args=(n_gpus, ...))`` unchanged,
the replica called ``init_process_group(world_size=0)`` / ``DistributedSampler(num_replicas=0)``
and crashed. The reviewed fix sets that parameter from the XLA runtime inside the launched
function (where the launcher started one process per device, what nprocs counted on CUDA)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from xla_lens.engine import fix_source

from tests.helpers import findings, src


def _unsafe_fixed(code: str, target: str = "modern", only_204: bool = True) -> str:
    accept = (lambda f: f.code == "XLA204") if only_204 else (lambda f: True)
    out = fix_source(src(code), target=target, accept=accept, unsafe=True)
    assert out.error is None
    return out.source


SPAWN = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, n_gpus, lr):
{body}
    dist.init_process_group("nccl", init_method="env://", world_size=n_gpus, rank=rank)
    print(rank, n_gpus, lr)


def main():
{count}
    {spawn}


if __name__ == "__main__":
    main()
"""


def _code(
    spawn: str = "mp.spawn(run, nprocs=n_gpus, args=(n_gpus, 0.1))",
    count: str = "    n_gpus = torch.cuda.device_count()",
    body: str = "",
) -> str:
    return SPAWN.format(spawn=spawn, count=count, body=body)


def test_world_size_from_the_cuda_count_is_set_from_the_runtime_in_the_replica():
    code = _code()
    (f,) = findings(code, "XLA204")
    assert not f.fix.safe
    reason = f.fix.review_reason
    assert "n_gpus" in reason and "torch.cuda.device_count()" in reason
    assert "xr.world_size()" in reason
    out = _unsafe_fixed(code)
    assert "def run(rank, n_gpus, lr):\n    n_gpus = xr.world_size()\n" in out
    assert "import torch_xla.runtime as xr" in out
    assert "torch_xla.launch(run, args=(n_gpus, 0.1))" in out
    # torch_xla.launch has no nprocs: it starts one process per device.
    assert "nprocs" not in out


@pytest.mark.parametrize(
    "spawn",
    [
        "mp.spawn(run, (n_gpus, 0.1), n_gpus)",
        "mp.start_processes(run, args=(n_gpus, 0.1), nprocs=n_gpus, start_method='spawn')",
    ],
)
def test_positional_nprocs_and_start_processes(spawn):
    out = _unsafe_fixed(_code(spawn=spawn))
    assert "def run(rank, n_gpus, lr):\n    n_gpus = xr.world_size()\n" in out


def test_the_accelerator_count_is_the_same_count():
    out = _unsafe_fixed(_code(count="    n_gpus = torch.accelerator.device_count()"))
    assert "    n_gpus = xr.world_size()\n" in out


def test_a_module_level_count_is_found_too():
    code = _code(count="    pass").replace(
        "\n\ndef run(", "\nN_GPUS = torch.cuda.device_count()\n\n\ndef run("
    )
    out = _unsafe_fixed(
        code.replace("nprocs=n_gpus, args=(n_gpus,", "nprocs=N_GPUS, args=(N_GPUS,")
    )
    assert "def run(rank, n_gpus, lr):\n    n_gpus = xr.world_size()\n" in out


def test_the_count_called_in_place_is_found_too():
    code = _code(
        spawn="mp.spawn(run, nprocs=torch.cuda.device_count(), "
        "args=(torch.cuda.device_count(), 0.1))",
        count="    pass",
    )
    out = _unsafe_fixed(code)
    assert "def run(rank, n_gpus, lr):\n    n_gpus = xr.world_size()\n" in out


def test_legacy_target_reads_xrt_world_size():
    out = _unsafe_fixed(_code(), target="legacy")
    assert "    n_gpus = xm.xrt_world_size()\n" in out
    assert "xmp.spawn(run, args=(n_gpus, 0.1))" in out
    assert "nprocs" not in out


def test_the_runtime_read_goes_after_the_docstring_and_global_statements():
    body = '    """Train one replica."""\n    global STEP\n    STEP = 0'
    out = _unsafe_fixed(_code(body=body))
    assert '    """Train one replica."""\n    global STEP\n    n_gpus = xr.world_size()\n' in out


def test_count_not_the_process_count_is_named_but_not_rewritten():
    # nprocs=2 and the count passed besides: the parameter is not the number of replicas.
    code = _code(spawn="mp.spawn(run, nprocs=2, args=(n_gpus, 0.1))")
    (f,) = findings(code, "XLA204")
    reason = f.fix.review_reason
    assert "n_gpus" in reason and "torch.cuda.device_count()" in reason and "0 on an XLA" in reason
    assert "xr.world_size()" not in _unsafe_fixed(code)


def test_a_function_called_outside_the_launch_too_is_not_rewritten():
    code = _code(spawn="mp.spawn(run, nprocs=n_gpus, args=(n_gpus, 0.1))\n    run(0, 1, 0.1)")
    (f,) = findings(code, "XLA204")
    assert "n_gpus" in f.fix.review_reason and "torch.cuda.device_count()" in f.fix.review_reason
    assert "xr.world_size()" not in _unsafe_fixed(code)


def test_a_count_reaching_only_varargs_is_named_but_not_rewritten():
    code = (
        _code()
        .replace("def run(rank, n_gpus, lr):", "def run(rank, *rest):")
        .replace("world_size=n_gpus", "world_size=rest[0]")
        .replace("print(rank, n_gpus, lr)", "print(rank, rest)")
    )
    (f,) = findings(code, "XLA204")
    assert "torch.cuda.device_count()" in f.fix.review_reason
    assert "xr.world_size()" not in _unsafe_fixed(code)


@pytest.mark.parametrize(
    "count",
    [
        "    n_gpus = 2",
        "    n_gpus = torch.cuda.device_count()\n    n_gpus = min(n_gpus, 4)",
    ],
)
def test_a_name_not_bound_only_to_the_count_is_left_alone(count):
    code = _code(count=count)
    (f,) = findings(code, "XLA204")
    assert "device_count" not in f.fix.review_reason
    assert "xr.world_size()" not in _unsafe_fixed(code)


def test_a_parameter_of_the_launching_function_is_not_the_count():
    code = _code(count="    pass").replace("def main():", "def main(n_gpus=2):")
    (f,) = findings(code, "XLA204")
    assert "device_count" not in f.fix.review_reason


# vits-style (own fixture): assert CUDA, count the GPUs, spawn one replica per GPU with the
# count as the world size of the process group and of the DistributedSampler.
VITS_STYLE = """
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def run(rank, n_gpus, steps):
    dist.init_process_group("nccl", init_method="env://", world_size=n_gpus, rank=rank)
    torch.cuda.set_device(rank)
    gen = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(16, 4, generator=gen), torch.randn(16, 1, generator=gen))
    sampler = DistributedSampler(data, num_replicas=n_gpus, rank=rank, shuffle=False)
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    model = torch.nn.Linear(4, 1).cuda(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print(f"world-size {n_gpus} batches {len(loader)}")
    for step, (x, y) in enumerate(loader):
        if step == steps:
            break
        x, y = x.cuda(rank), y.cuda(rank)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(f"trained-step {step}")


def main():
    assert torch.cuda.is_available(), "CPU training is not allowed."
    n_gpus = torch.cuda.device_count()
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "29517"
    mp.spawn(run, nprocs=n_gpus, args=(n_gpus, 2))


if __name__ == "__main__":
    main()
"""


@pytest.mark.xla
def test_converted_vits_style_script_trains_with_world_size_one(tmp_path):
    converted = _unsafe_fixed(VITS_STYLE, only_204=False)
    assert "n_gpus = xr.world_size()" in converted
    assert "launch(run, args=(n_gpus, 2))" in converted
    script = tmp_path / "vits_style.py"
    script.write_text(converted)
    env = {**os.environ, "PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "1"}
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "world-size 1 batches 4" in out
    assert "trained-step 0" in out and "trained-step 1" in out, out[-3000:]
