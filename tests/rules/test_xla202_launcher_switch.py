"""XLA202 in a script that already handles XLA and keeps a torchrun (or non-XLA) mode.

``if "WORLD_SIZE" in os.environ: <torchrun branch> else: xmp.spawn(_mp_fn)``: the torchrun
branch runs only where torchrun set the variables, and the XLA replicas take their rank from
the runtime. Neither the branch's reads nor the test that picks it are wrong; rewriting the test
as ``xr.world_size() > 1`` would even touch the runtime in the launcher's parent.
"""

from __future__ import annotations

from tests.helpers import findings

HEADER = """
import os
import torch
import torch.distributed as dist
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def train(rank, world_size):
    device = torch_xla.device()
    model = torch.nn.Linear(4, 2).to(device)
    xm.mark_step()
    xm.master_print(rank, world_size)


def _mp_fn(index):
    train(xr.global_ordinal(), xr.world_size())
"""


def lines(code: str) -> list[int]:
    return [f.span.start.line + 1 for f in findings(code, "XLA202")]


def test_the_torchrun_branch_of_an_env_switch_is_quiet():
    code = (
        HEADER
        + """

if __name__ == "__main__":
    if "WORLD_SIZE" in os.environ:
        rank = int(os.environ["RANK"])
        world = int(os.environ["WORLD_SIZE"])
        dist.init_process_group("xla", init_method="xla://")
        train(rank, world)
    else:
        xmp.spawn(_mp_fn)
"""
    )
    assert lines(code) == []


def test_a_torchrun_helper_called_only_from_that_branch_is_quiet():
    code = (
        HEADER
        + """

def run_torchrun():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    dist.init_process_group("xla", init_method="xla://")
    train(rank, world)


if __name__ == "__main__":
    if os.environ.get("LOCAL_RANK") is not None:
        run_torchrun()
    else:
        xmp.spawn(_mp_fn)
"""
    )
    assert lines(code) == []


def test_an_early_return_for_torchrun_before_the_launch_is_quiet():
    code = (
        HEADER
        + """

def main():
    if "RANK" in os.environ:
        dist.init_process_group("xla", init_method="xla://")
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
        return
    torch_xla.launch(_mp_fn)


main()
"""
    )
    assert lines(code) == []


def test_a_non_xla_mode_chosen_by_a_flag_is_quiet():
    code = (
        HEADER
        + """

def main(args):
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if args.xla:
        torch_xla.launch(_mp_fn)
    else:
        dist.init_process_group("gloo")
        print("local rank", local_rank)
        train(int(os.environ["RANK"]), dist.get_world_size())
"""
    )
    assert lines(code) == []


def test_reads_the_xla_side_runs_are_still_reported():
    # The read is in the replica the XLA launcher starts: RANK is unset there.
    replica = HEADER.replace(
        "train(xr.global_ordinal(), xr.world_size())",
        'train(int(os.environ["RANK"]), xr.world_size())',
    ) + (
        """

if __name__ == "__main__":
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("xla", init_method="xla://")
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        xmp.spawn(_mp_fn)
"""
    )
    assert lines(replica) == [18]
    # Read before the switch and used by both sides: the XLA side sees the default.
    both = (
        HEADER
        + """

def main(args):
    rank = int(os.environ.get("RANK", 0))
    if args.xla:
        torch_xla.launch(_mp_fn, args=(rank,))
    else:
        dist.init_process_group("gloo")
        train(rank, dist.get_world_size())
"""
    )
    assert lines(both) == [22]
    # An unconditional os.environ["RANK"] raises KeyError before the XLA side is reached.
    raises = both.replace('os.environ.get("RANK", 0)', 'os.environ["RANK"]').replace(
        "args=(rank,)", "args=()"
    )
    assert lines(raises) == [22]


def test_a_switch_to_a_cuda_launcher_is_not_an_xla_one():
    code = """
    import os
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp

    def worker(rank, world):
        dist.init_process_group("nccl", rank=rank, world_size=world)

    if __name__ == "__main__":
        if "WORLD_SIZE" in os.environ:
            worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
        else:
            mp.spawn(worker, args=(2,), nprocs=2)
    """
    assert lines(code) == [10, 11, 11]


def test_a_rank_picked_by_an_xla_flag_keeps_the_other_mode_s_env_read():
    code = """
    import os
    import torch_xla.runtime as xr

    def ranks(use_xla):
        world = xr.world_size() if use_xla else int(os.environ["WORLD_SIZE"])
        if use_xla:
            rank = xr.global_ordinal()
        else:
            rank = int(os.environ["RANK"])
        return rank, world
    """
    assert lines(code) == []
    # Both sides ask torchrun: no XLA side, the reads are reported as before.
    unconverted = code.replace("xr.world_size()", 'int(os.environ["WORLD_SIZE"])').replace(
        "rank = xr.global_ordinal()", 'rank = int(os.environ["LOCAL_RANK"])'
    )
    assert lines(unconverted) == [5, 5, 7, 9]


def test_one_quick_fix_in_a_cuda_script_does_not_silence_the_other_branch():
    # XLA202's own fix wrote xr.global_ordinal() in one branch; the script still runs on CUDA.
    code = """
    import os
    import torch
    import torch_xla.runtime as xr

    def setup(args):
        if args.distributed:
            rank = xr.global_ordinal()
        else:
            rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(rank)
        return rank
    """
    assert lines(code) == [9]
