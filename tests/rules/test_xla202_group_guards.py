"""XLA202: torch.distributed rank queries that run only where a process group exists
(``if not dist.is_initialized(): return 0`` first, or under ``if dist.is_initialized():``)
ask that group, which answers on the "xla" backend too: no finding (held-out 31, YOLOX's
utils/dist.py, where subgroup queries were told to be computed by hand)."""

from tests.helpers import findings

COMM = """
import torch.distributed as dist

_LOCAL_GROUP = None

def get_local_rank():
    if not dist.is_available() or not dist.is_initialized():
        return 0
    if _LOCAL_GROUP is None:
        return dist.get_rank()
    return dist.get_rank(group=_LOCAL_GROUP)

def get_world_size():
    return dist.get_world_size() if dist.is_initialized() else 1

def barrier():
    if dist.is_available() and dist.is_initialized():
        print(dist.get_world_size(_LOCAL_GROUP))
"""


def test_queries_that_run_only_with_a_group_are_left_alone():
    assert not findings(COMM, "XLA202")


def test_unguarded_and_wrongly_guarded_queries_are_still_reported():
    code = """
    import torch.distributed as dist

    def rank():
        if dist.is_initialized():
            pass
        return dist.get_rank()

    def size():
        if not dist.is_initialized():
            print("no group")
        return dist.get_world_size()

    def subgroup(g):
        if dist.is_initialized() or g is None:
            return dist.get_rank(g)
    """
    lines = [f.span.start.line for f in findings(code, "XLA202")]
    assert lines == [5, 10, 14]
