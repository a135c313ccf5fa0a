"""XLA204 for replicas started by hand (held-out 98, PreSumm's ``train_abs_multi``:
``mp = torch.multiprocessing.get_context('spawn')``, one ``mp.Process(target=run, ...)`` per
GPU): advice at the ``Process`` call, no fix, and no ``_mp_fn`` that would launch twice. A
process that is no replica (a data-loading worker) is not one."""

from tests.helpers import findings

HAND = """
import torch
import torch.distributed as dist


def run(args, device_id, queue):
    dist.init_process_group("nccl", rank=device_id, world_size=args.world_size)
    torch.cuda.set_device(device_id)


def train_multi(args):
    mp = torch.multiprocessing.get_context("spawn")
    queue = mp.SimpleQueue()
    procs = []
    for i in range(args.world_size):
        procs.append(mp.Process(target=run, args=(args, i, queue), daemon=True))
        procs[i].start()
    for p in procs:
        p.join()


if __name__ == "__main__":
    train_multi(parse())
"""


def test_a_process_per_device_is_advice_at_the_process_call():
    (f,) = findings(HAND, "XLA204")
    assert f.span.start.line == 14 and f.fix is None
    assert "starts its replicas by hand, one process per device running `run`" in f.message
    assert "torch_xla.launch(fn, args=(...))" in f.manual and "No fix" in f.manual


def test_a_worker_process_is_no_replica():
    worker = HAND.replace("for i in range(args.world_size):", "for i in range(args.workers):")
    worker = worker.replace("args=(args, i, queue)", "args=(args, queue)")
    assert not any("by hand" in f.message for f in findings(worker, "XLA204"))
