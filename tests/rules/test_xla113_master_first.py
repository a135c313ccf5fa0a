"""XLA113 and the master-first cache: the other replicas wait at a barrier before the cache
is built (``if not xm.is_master_ordinal(): xm.rendezvous(...)``), the master builds and writes
it, then releases them (``if xm.is_master_ordinal(): xm.rendezvous(...)``); released, the
others find the file and read it. Only the master reaches a write that runs only when the
cache is missing: no finding. A write every replica reaches (after being released) is
still reported."""

from tests.helpers import findings

XLA = """
import os
import torch
import torch_xla
import torch_xla.core.xla_model as xm


def cached(path):
    if not xm.is_master_ordinal():
        xm.rendezvous("build")
    if os.path.exists(path):
        data = torch.load(path)
    else:
        data = [[1.0, 2.0], [3.0, 4.0]]
        torch.save(data, path)
    if xm.is_master_ordinal():
        xm.rendezvous("build")
    return data


def _mp_fn(index):
    cached("/tmp/feats.pt")


torch_xla.launch(_mp_fn)
"""

CUDA = """
import os
import torch
import torch.distributed as dist


def cached(args, path):
    if args.local_rank not in [-1, 0]:
        dist.barrier()
    if not os.path.isfile(path) or args.rebuild:
        data = make_features()
        with open(path + ".txt", "w") as f:
            f.write("built")
        torch.save(data, path)
    else:
        data = torch.load(path)
    if args.local_rank == 0:
        dist.barrier()
    return data


def main(args):
    dist.init_process_group("nccl")
    cached(args, "feats.pt")
"""


def lines(code: str) -> list[int]:
    return [f.span.start.line + 1 for f in findings(code, "XLA113")]


def test_a_cache_written_between_the_master_first_barriers_is_quiet():
    assert lines(XLA) == []
    assert lines(CUDA) == []


def test_a_write_every_released_replica_reaches_is_still_reported():
    code = XLA.replace(
        "    if xm.is_master_ordinal():\n        xm.rendezvous",
        '    torch.save(data, "copy.pt")\n    if xm.is_master_ordinal():\n        xm.rendezvous',
    )
    assert lines(code) == [15]


def test_without_the_closing_barrier_the_write_is_reported():
    code = XLA.replace('    if xm.is_master_ordinal():\n        xm.rendezvous("build")\n', "")
    assert lines(code) == [14]


def test_a_barrier_every_replica_passes_is_no_master_first_bracket():
    code = XLA.replace(
        '    if not xm.is_master_ordinal():\n        xm.rendezvous("build")\n',
        '    xm.rendezvous("build")\n',
    )
    assert lines(code) == [13]
