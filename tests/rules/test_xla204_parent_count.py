"""XLA204 on ``mp.spawn`` when the parent computes from the CUDA device count before it
(held-out 12 r4, simsiam's ``args.world_size = ngpus_per_node * args.world_size``): on an XLA
host the count is 0, so is what the parent computes, and it reaches the worker through its
arguments (``init_process_group(world_size=0)``, ``int(256 / nper)``: ZeroDivisionError).
Rebinding the worker's parameter does not reach it: no launch fix, advice naming the lines."""

from __future__ import annotations

from xla_lens.engine import fix_source

from tests.helpers import findings, src

REPRO = """
import argparse
import torch
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--world-size", default=1, type=int)


def worker(gpu, nper, args):
    per_proc = int(256 / nper)
    print(gpu, per_proc, args.world_size)


def main():
    args = p.parse_args()
    nper = torch.cuda.device_count()
    args.world_size = nper * args.world_size
    {launch}


if __name__ == "__main__":
    main()
"""


def _unsafe(code: str) -> str:
    out = fix_source(src(code), accept=lambda f: f.code == "XLA204", unsafe=True)
    assert out.error is None
    return out.source


def test_a_world_size_computed_from_the_count_gets_no_launch_fix():
    code = REPRO.format(launch="mp.spawn(worker, nprocs=nper, args=(nper, args))")
    (f,) = findings(code, "XLA204")
    assert f.fix is None
    assert "line 17 (`args.world_size = nper * args.world_size`)" in f.message
    assert "xr.world_size()" in f.manual and "torch_xla.launch(worker" in f.manual
    assert "torch_xla" not in _unsafe(code)


def test_a_direct_call_with_the_count_is_named_too():
    launch = (
        "if args.world_size > 1:\n"
        "        mp.spawn(worker, nprocs=nper, args=(nper, args))\n"
        "    else:\n"
        "        worker(0, nper, args)"
    )
    (f,) = findings(REPRO.format(launch=launch), "XLA204")
    assert f.fix is None
    assert "line 17" in f.message and "line 21 (`worker(0, nper, args)`)" in f.message


def test_the_count_called_again_in_the_parent_is_named():
    code = REPRO.format(launch="mp.spawn(worker, nprocs=nper, args=(nper, args))").replace(
        "nper * args.world_size", "torch.cuda.device_count() * args.world_size"
    )
    (f,) = findings(code, "XLA204")
    assert f.fix is None and "line 17" in f.message


def test_a_count_only_passed_on_keeps_the_reviewed_fix():
    code = REPRO.format(launch="mp.spawn(worker, nprocs=nper, args=(nper, args))").replace(
        "    args.world_size = nper * args.world_size\n", ""
    )
    (f,) = findings(code, "XLA204")
    assert f.fix is not None and not f.fix.safe
    assert "nper = xr.world_size()" in _unsafe(code)


def test_a_count_stored_on_the_options_object_handed_to_the_worker_blocks_the_fix():
    # held-out 41 (pytorch-distributed's multiprocessing_distributed.py): `args.nprocs =
    # torch.cuda.device_count()` then `mp.spawn(main_worker, nprocs=args.nprocs,
    # args=(args.nprocs, args))`; the worker reads `args.nprocs` for world_size and to divide
    # the batch size: 0 on an XLA host (ZeroDivisionError), out of reach of a launch fix.
    code = """
    import argparse
    import torch
    import torch.multiprocessing as mp

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", default=256, type=int)


    def main_worker(local_rank, nprocs, args):
        args.batch_size = int(args.batch_size / args.nprocs)
        print(local_rank, nprocs, args.batch_size)


    def main():
        args = parser.parse_args()
        args.nprocs = torch.cuda.device_count()
        mp.spawn(main_worker, nprocs=args.nprocs, args=(args.nprocs, args))


    if __name__ == "__main__":
        main()
    """
    (f,) = [f for f in findings(code, "XLA204") if "spawn" in f.message]
    assert f.fix is None
    assert "at line 16 (`args.nprocs = torch.cuda.device_count()`)" in f.message
    assert "reaches main_worker()" in f.message
