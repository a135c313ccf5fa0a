"""Held-out 54's torchrun trainer: a checkpoint dict filled entry by entry from the wrapped
model's state dict is a checkpoint (XLA108), and ``except Exception as e: print(e)`` around the
training stays a print on every replica (XLA113: master-only, the other replicas' failures
would leave no trace, measured by the probe with two replicas)."""

from tests.helpers import findings, fixed, src

TRAINER = src("""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model):
        self.model = DDP(model)

    def save(self, epoch):
        snapshot = {}
        snapshot["MODEL_STATE"] = self.model.module.state_dict()
        snapshot["EPOCHS_RUN"] = epoch
        torch.save(snapshot, "snapshot.pt")


def main():
    try:
        dist.init_process_group("nccl")
        trainer = Trainer(torch.nn.Linear(4, 1).cuda())
        for epoch in range(2):
            print("epoch", epoch)
            trainer.save(epoch)
    except Exception as e:
        print(e)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
""")


def _line(text: str) -> int:
    return next(i for i, line in enumerate(TRAINER.splitlines()) if text in line)


def test_a_checkpoint_dict_filled_entry_by_entry_is_saved_with_xm_save():
    (f,) = findings(TRAINER, "XLA108")
    assert f.span.start.line == _line('torch.save(snapshot, "snapshot.pt")')
    assert 'xm.save(snapshot, "snapshot.pt")' in fixed(TRAINER, "XLA108")


def test_a_print_in_an_except_handler_stays_on_every_replica():
    lines = {f.span.start.line for f in findings(TRAINER, "XLA113")}
    assert _line("print(e)") not in lines
    assert _line('print("epoch", epoch)') in lines
