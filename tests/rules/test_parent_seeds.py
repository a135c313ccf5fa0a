"""A CUDA seed in the launcher's parent (held-out 49, semseg: ``main()`` seeds, then
``mp.spawn(main_worker, ...)``): ``torch_xla.manual_seed`` there starts the XLA runtime and the
launch raises "Runtime is already initialized" (measured on torch_xla 2.9), so no fix writes it
there, not even for review; the finding says where the seed belongs."""

from xla_lens.engine.fixing import fix_source

from tests.helpers import findings, src

SPAWNED = src("""
import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def main_worker(gpu, ngpus, args):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:23456", world_size=ngpus, rank=gpu)
    model = nn.Linear(4, 2).cuda(gpu)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(8, 4).cuda(gpu)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpus", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    if args.gpus > 1:
        mp.spawn(main_worker, nprocs=args.gpus, args=(args.gpus, args))
    else:
        main_worker(0, 1, args)


if __name__ == "__main__":
    main()
""")


def test_a_cuda_seed_in_the_parent_gets_no_fix_and_says_where_to_seed():
    seeds = [f for f in findings(SPAWNED, "XLA403") if "manual_seed" in f.message]
    assert len(seeds) == 2
    for f in seeds:
        assert f.fix is None
        assert "no fix here" in f.message and "launcher's parent" in f.message
        assert "function each replica runs" in f.manual
        assert "torch_xla.manual_seed(args.seed)" in f.manual


def test_unsafe_fixes_write_no_xla_seed_in_the_parent():
    fixed = fix_source(SPAWNED, unsafe=True).source
    main = fixed[fixed.index("def main():") :]
    main = main[: main.index('if __name__ == "__main__":')]
    assert "torch_xla.manual_seed" not in main
    assert "xm.set_rng_state" not in main


def test_a_seed_in_the_replica_function_keeps_its_fix():
    replica_seed = SPAWNED.replace(
        "    model = nn.Linear(4, 2).cuda(gpu)\n",
        "    torch.cuda.manual_seed(args.seed + gpu)\n    model = nn.Linear(4, 2).cuda(gpu)\n",
    )
    (f,) = [
        f
        for f in findings(replica_seed, "XLA403")
        if "manual_seed" in f.message and "args.seed + gpu" in f.message
    ]
    assert f.fix is not None
    assert "torch_xla.manual_seed(args.seed + gpu)" in f.fix.title


def test_the_unsafe_conversion_did_convert_the_launch():
    # Guards the test above against a conversion that did nothing.
    fixed = fix_source(SPAWNED, unsafe=True).source
    assert "torch_xla.launch(main_worker" in fixed
    assert "mp.spawn" not in fixed


DRIVEN_FROM_MAIN_BLOCK = src("""
import os
import torch
import torch.distributed as dist
import torch.nn as nn

model = nn.Linear(4, 2)


def train_epoch(epoch, opt):
    for step in range(3):
        loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    ddp = int(os.environ.get("RANK", -1)) != -1
    if ddp:
        dist.init_process_group("nccl")
    torch.manual_seed(1337)
    torch.cuda.manual_seed(1337)
    model.cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        train_epoch(epoch, opt)
""")


def test_a_main_block_that_drives_the_training_is_no_launchers_parent():
    # Held-out 50 (baby-llama2): the epoch loop in the main block calls train_epoch(), so no
    # launcher can be wrapped around one call (XLA204 asks to move the block into main());
    # every torchrun process runs the block, and the block moves as a whole: its seeds are
    # the replicas' own.
    (cuda_seed,) = [f for f in findings(DRIVEN_FROM_MAIN_BLOCK, "XLA403") if "seed" in f.message]
    assert cuda_seed.fix is not None and cuda_seed.fix.safe
    assert "parent" not in cuda_seed.message
    (advice,) = findings(DRIVEN_FROM_MAIN_BLOCK, "XLA204")
    assert "no launcher can be added" in advice.message
    assert "into a main() function" in advice.manual and "_mp_fn(index): main()" in advice.manual
    # With a main(args) of its own (held-out 61's vq-vae-2), `_mp_fn(index): main()` would
    # call it without its argument: the advice names a function the script has not got.
    taken = DRIVEN_FROM_MAIN_BLOCK.replace(
        "def train_epoch(", "def main(args):\n    pass\n\n\ndef train_epoch("
    )
    (advice,) = findings(taken, "XLA204")
    assert "into a run() function" in advice.manual and "_mp_fn(index): run()" in advice.manual
