"""XLA205: library helpers that build the process group from torchrun's environment (timm's
init_distributed_device, mmcv's init_dist, DeepSpeed's init_distributed) are reported with
no fix (held-out 32, efficientdet's train.py)."""

from xla_lens.engine.fixing import fix_source

from tests.helpers import findings, src

TIMM_INIT = """
import argparse
import torch
import timm.utils as utils

parser = argparse.ArgumentParser()
args = parser.parse_args()
args.device = "cuda:0"
device = utils.init_distributed_device(args)
model = torch.nn.Linear(8, 2).to(device)
if args.distributed:
    model = torch.nn.parallel.DistributedDataParallel(model)
"""


def test_timms_init_distributed_device_is_reported_without_a_fix():
    found = [f for f in findings(TIMM_INIT, "XLA205") if f.span.start.line == 7]
    assert len(found) == 1
    assert found[0].fix is None
    assert "not distributed" in found[0].message and "xla" in found[0].message
    assert 'init_process_group("xla"' in found[0].manual
    # Nothing the fixes write touches the call.
    out = fix_source(src(TIMM_INIT), target="modern", unsafe=True).source
    assert "utils.init_distributed_device(args)" in out


def test_mmcv_and_deepspeed_inits_too():
    code = """
    import deepspeed
    from mmcv.runner import init_dist

    init_dist("pytorch", backend="nccl")
    deepspeed.init_distributed()
    """
    lines = [f.span.start.line for f in findings(code, "XLA205")]
    assert 3 in lines and 4 in lines


def test_a_workspace_function_of_the_same_name_is_not_a_library_helper():
    code = """
    def init_distributed_device(args):
        args.distributed = False

    init_distributed_device(object())
    """
    assert not findings(code, "XLA205")
