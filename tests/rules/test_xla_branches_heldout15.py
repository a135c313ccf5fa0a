"""Held-out 15 (SimCSE's Trainer subclass): the other side of a torch_xla availability test
never runs where torch_xla does, even with no CUDA code in it (a torch.save that the XLA side
does with xm.save: rewriting it made every GPU run raise NameError on ``xm``); and in HF
Trainer code ``args.n_gpu > 1`` is the Trainer's own CUDA side (n_gpu is 0 on XLA)."""

from __future__ import annotations

from tests.helpers import findings, fixed, src

AVAILABILITY_SWITCH = src("""
import os
import torch
from transformers.utils import is_torch_xla_available

if is_torch_xla_available():
    import torch_xla.core.xla_model as xm


class Saver:
    def __init__(self, optimizer, is_world_process_zero):
        self.optimizer = optimizer
        self.is_world_process_zero = is_world_process_zero

    def save(self, output_dir):
        if is_torch_xla_available():
            xm.rendezvous("saving_optimizer_states")
            xm.save(self.optimizer.state_dict(), os.path.join(output_dir, "optimizer.pt"))
        elif self.is_world_process_zero:
            torch.save(self.optimizer.state_dict(), os.path.join(output_dir, "optimizer.pt"))
""")


def test_the_other_side_of_a_torch_xla_availability_test_is_left_alone():
    assert findings(AVAILABILITY_SWITCH) == []
    assert fixed(AVAILABILITY_SWITCH) == AVAILABILITY_SWITCH


def test_without_the_availability_test_the_save_is_still_converted():
    plain = AVAILABILITY_SWITCH.replace(
        "        if is_torch_xla_available():\n", "        if self.use_xm:\n"
    )
    assert [f.code for f in findings(plain, "XLA108")] == ["XLA108"]


TRAINER_SUBCLASS = src("""
import torch
from transformers import Trainer


class MyTrainer(Trainer):
    def wrap(self, model):
        if self.args.n_gpu > 1:
            model = torch.nn.DataParallel(model)
        return model
""")


def test_data_parallel_under_n_gpu_in_a_trainer_subclass_is_the_trainers_cuda_side():
    assert findings(TRAINER_SUBCLASS, "XLA110") == []
    assert "torch.nn.DataParallel(model)" in fixed(TRAINER_SUBCLASS)


def test_n_gpu_outside_trainer_code_is_still_reported():
    plain = TRAINER_SUBCLASS.replace("(Trainer)", "").replace(
        "from transformers import Trainer\n", ""
    )
    assert [f.code for f in findings(plain, "XLA110")] == ["XLA110"]
