"""A launch whose target is a bound method (``xmp.spawn(self._mp_fn, args=(), nprocs=8)`` in a
Trainer class; held-out 183's KoBERT-nsmc TPU branch): the replicas run ``self._mp_fn`` and what
it calls. Before, nothing was taken as the replica's code, so XLA501 said the ordinal reads ran
"in the launcher's parent process": no fix for the one in a helper, and the others held for
review for that wrong reason."""

from tests.helpers import findings, src

TRAINER = src("""
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def device_spec(device):
    ordinal = xm.get_ordinal(defval=-1)
    return f"{device}:{ordinal}"


class Trainer:
    def __init__(self, args):
        self.args = args

    def train(self):
        xmp.spawn(self._mp_fn, args=())

    def _mp_fn(self, rank):
        self.main_func(rank)

    def main_func(self, rank):
        device = xm.xla_device()
        print(device_spec(device))
        if xm.xrt_world_size() > 1:
            print("replicas", xm.xrt_world_size(), xm.get_ordinal())


if __name__ == "__main__":
    Trainer(None).train()
""")


def test_the_ordinal_reads_of_a_bound_method_launch_run_in_the_replicas():
    removed = [f for f in findings(TRAINER, "XLA501") if "was removed" in f.message]
    assert len(removed) == 4
    for f in removed:
        assert "parent process" not in f.message, f.message
        assert f.fix is not None and f.fix.safe, f


def test_a_call_before_the_launch_still_runs_in_the_parent():
    code = TRAINER.replace(
        "        xmp.spawn(self._mp_fn, args=())",
        "        print(xm.xrt_world_size())\n        xmp.spawn(self._mp_fn, args=())",
    )
    (parent,) = [f for f in findings(code, "XLA501") if "parent process" in f.message]
    assert parent.span.start.line == 15  # 0-based: the print before the spawn
