"""XLA204 converting ``torch.multiprocessing.spawn``: the args tuple (keyword or positional)
must reach the XLA launcher, which calls ``fn(index, *args)`` as mp.spawn does; dropping it
made every replica raise TypeError. And the review reasons name the branch of an ``if`` that
holds the launch (or the gated setup) the right way round."""

from __future__ import annotations

import pytest
from xla_lens.engine import fix_source

from tests.conversions.harness import assert_proven, prove
from tests.helpers import findings, src


def _unsafe_fixed(code: str, target: str = "modern") -> str:
    out = fix_source(src(code), target=target, accept=lambda f: f.code == "XLA204", unsafe=True)
    assert out.error is None
    return out.source


SPAWNS = """
import torch.multiprocessing as mp
import torch.distributed as dist
import torch


def worker(index, cfg):
    dist.init_process_group("nccl", rank=index)


def main(cfg):
    {spawn}


if __name__ == "__main__":
    main({{}})
"""


@pytest.mark.parametrize(
    ("spawn", "launch"),
    [
        ("mp.spawn(worker, (cfg,), 2)", "torch_xla.launch(worker, args=(cfg,))"),
        ("mp.spawn(worker, args=(cfg,), nprocs=2)", "torch_xla.launch(worker, args=(cfg,))"),
        (
            "torch.multiprocessing.spawn(worker, (cfg,), nprocs=2, join=True)",
            "torch_xla.launch(worker, args=(cfg,))",
        ),
        (
            "mp.start_processes(worker, (cfg,), 2, start_method='fork')",
            "torch_xla.launch(worker, args=(cfg,), start_method='fork')",
        ),
        (
            "mp.spawn(worker, nprocs=2, args=spawn_args)",
            "torch_xla.launch(worker, args=spawn_args)",
        ),
    ],
)
def test_the_args_tuple_reaches_the_launcher(spawn, launch):
    code = SPAWNS.format(spawn=spawn).replace("def main(cfg):", "def main(cfg, spawn_args=()):")
    (f,) = findings(code, "XLA204")
    assert not f.fix.safe
    assert launch in f.fix.title
    assert launch in _unsafe_fixed(code)


def test_legacy_target_carries_the_positional_args_too():
    code = SPAWNS.format(spawn="mp.spawn(worker, (cfg,), 2)")
    assert "xmp.spawn(worker, args=(cfg,))" in _unsafe_fixed(code, target="legacy")


def test_a_worker_whose_signature_does_not_take_index_and_args_gets_no_fix():
    code = SPAWNS.format(spawn="mp.spawn(worker, (cfg, 1), 2)")
    (f,) = findings(code, "XLA204")
    assert f.fix is None
    assert "worker" in f.manual and "2 arguments after the index" in f.manual


def test_starred_spawn_arguments_get_no_fix():
    code = SPAWNS.format(spawn="mp.spawn(worker, *spawn_args)")
    (f,) = findings(code, "XLA204")
    assert f.fix is None and f.manual


def test_join_false_is_named_in_the_review_reason():
    code = SPAWNS.format(spawn="ctx = mp.spawn(worker, (cfg,), 2, join=False)")
    (f,) = findings(code, "XLA204")
    assert "join=False" in f.fix.review_reason


GATED_SPAWN = """
import argparse
import torch.multiprocessing as mp
import torch.distributed as dist


def worker(index, cfg):
    dist.init_process_group("nccl", rank=index)


def main(cfg):
    pass


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--distributed", action="store_true")
    cfg = p.parse_args()
{branches}
"""


def test_spawn_in_the_if_branch_is_described_as_such():
    code = GATED_SPAWN.format(
        branches="    if cfg.distributed:\n        mp.spawn(worker, (cfg,), 2)\n"
        "    else:\n        main(cfg)"
    )
    (f,) = findings(code, "XLA204")
    assert "launch runs only under `if cfg.distributed`" in f.fix.review_reason
    assert "else" not in f.fix.review_reason


def test_spawn_in_the_else_branch_is_described_as_such():
    code = GATED_SPAWN.format(
        branches="    if not cfg.distributed:\n        main(cfg)\n"
        "    else:\n        mp.spawn(worker, (cfg,), 2)"
    )
    (f,) = findings(code, "XLA204")
    assert "launch runs only in the `else:` of `if not cfg.distributed`" in f.fix.review_reason
    assert "only under `if not cfg.distributed`" not in f.fix.review_reason


GATED_DDP = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    model = torch.nn.Linear(2, 2)
{gate}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        model(torch.ones(2)).sum().backward()
        opt.step()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--distributed", action="store_true")
    main(p.parse_args())
"""


def _reason(gate: str) -> str:
    (f,) = findings(GATED_DDP.format(gate=gate), "XLA204")
    assert not f.fix.safe
    return f.fix.review_reason


def test_gate_in_the_if_branch():
    reason = _reason(
        "    if args.distributed:\n        dist.init_process_group('nccl')\n"
        "        model = DDP(model)"
    )
    assert "DistributedDataParallel (line 11) runs only under `if args.distributed`" in reason


def test_gate_in_the_else_branch_is_not_described_backwards():
    reason = _reason(
        "    if not args.distributed:\n        pass\n    else:\n"
        "        dist.init_process_group('nccl')\n        model = DDP(model)"
    )
    assert "runs only under `if not args.distributed`" not in reason
    assert "runs only in the `else:` of `if not args.distributed`" in reason


def test_gate_after_an_early_return_is_not_described_backwards():
    code = GATED_DDP.format(
        gate="    if not args.distributed:\n        return\n"
        "    dist.init_process_group('nccl')\n    model = DDP(model)"
    )
    (f,) = findings(code, "XLA204")
    reason = f.fix.review_reason
    assert "runs only under `if not args.distributed`" not in reason
    assert "runs only after `if not args.distributed: return`" in reason


SPAWN_RUN = """
import os

import torch
import torch.multiprocessing as mp

STEPS = int(os.environ.get("XLA_LENS_STEPS", "3"))


def worker(index, cfg):
    print("xla-lens-mp-fn: started")
    print(f"xla-lens-cfg: lr={cfg['lr']} tag={cfg['tag']}")
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(16, 8, generator=gen)
    target = torch.randn(16, 1, generator=gen)
    model = torch.nn.Linear(8, 1).cuda(index)
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
    for _ in range(STEPS):
        x, y = data.cuda(index), target.cuda(index)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(f"xla-lens-loss: {loss.item()}")
    print(f"xla-lens-param-device: {next(model.parameters()).device}")


if __name__ == "__main__":
    cfg = {"lr": 0.05, "tag": "from-parent"}
    mp.spawn(worker, (cfg,), 1)
"""


@pytest.mark.xla
def test_converted_positional_spawn_runs_and_each_replica_sees_cfg(tmp_path):
    fixture = tmp_path / "spawn_positional_args.py"
    fixture.write_text(SPAWN_RUN.lstrip())
    result = prove(fixture, steps=2, cuda_shim=True, accept_review=("XLA204",), timeout=180)
    assert "torch_xla.launch(worker, args=(cfg,))" in result.converted_source
    assert_proven(result, expect_mp_fn=True)
    assert "xla-lens-cfg: lr=0.05 tag=from-parent" in result.converted.stdout
    assert "xla-lens-cfg: lr=0.05 tag=from-parent" in result.original.stdout


def test_a_gated_group_with_a_rank_zero_check_says_every_replica_writes():
    # held-out 22 r3 (hysts' train.py): with no group every replica is rank 0, so each passes
    # `get_rank() == 0` and writes the logs and checkpoints.
    gate = (
        "    if args.distributed:\n        dist.init_process_group('nccl')\n"
        "        model = DDP(model)\n    if dist.get_rank() == 0:\n        print('saving')"
    )
    reason = _reason(gate)
    assert "every replica is rank 0 to torch.distributed, so `dist.get_rank() == 0`" in reason
    assert "every replica is rank 0" not in _reason(gate.split("    if dist.get_rank")[0])
