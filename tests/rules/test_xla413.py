"""XLA413: ``xm.all_reduce(op, tensor)`` as a statement reduces nothing (held-out 171's
already-XLA control: BatchNorm statistics meant to be averaged across replicas)."""

import subprocess
import sys

import pytest

from tests.helpers import findings, fixed

SYNC_BN = """
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def sync_bn(model):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            xm.all_reduce(xm.REDUCE_SUM, m.running_mean, scale=1.0 / xr.world_size())
"""


def test_a_discarded_single_tensor_reduction_is_reported_with_a_review_fix():
    (f,) = findings(SYNC_BN, "XLA413")
    assert "`m.running_mean` returns the reduced value" in f.message
    assert f.fix is not None and not f.fix.safe
    out = fixed(SYNC_BN, "XLA413", unsafe=True)
    assert "xm.all_reduce(xm.REDUCE_SUM, [m.running_mean], scale=1.0 / xr.world_size())" in out
    assert findings(out, "XLA413") == []


@pytest.mark.parametrize(
    "line",
    [
        "m.running_mean = xm.all_reduce(xm.REDUCE_SUM, m.running_mean)",
        "xm.all_reduce(xm.REDUCE_SUM, [m.running_mean, m.running_var])",
        "xm.all_reduce(xm.REDUCE_SUM, stats)",
    ],
)
def test_kept_results_lists_and_unknown_inputs_are_left_alone(line):
    code = SYNC_BN.replace(
        "xm.all_reduce(xm.REDUCE_SUM, m.running_mean, scale=1.0 / xr.world_size())", line
    ).replace("def sync_bn(model):", "def sync_bn(model, stats):")
    assert findings(code, "XLA413") == []


@pytest.mark.parametrize(
    ("binding", "reported"),
    [
        # torch_xla's own helper returns a list (held-out 181, GPT-SoVITS: the fix's
        # `[gradients]` raised TypeError in _xla_all_reduce_inplace).
        ("gradients = xm._fetch_gradients(optimizer)", False),
        ("gradients = collect_grads(model)", False),  # the script's own: unknown
        ("gradients = torch.cat([p.grad.flatten() for p in model.parameters()])", True),
        ("gradients = m.running_mean.clone()", True),
    ],
)
def test_a_name_bound_to_a_call_is_a_single_tensor_only_when_known(binding, reported):
    code = SYNC_BN.replace(
        "            xm.all_reduce(xm.REDUCE_SUM, m.running_mean, scale=1.0 / xr.world_size())",
        f"            {binding}\n            xm.all_reduce(xm.REDUCE_SUM, gradients)",
    ).replace("import torch.nn as nn", "import torch\nimport torch.nn as nn")
    assert bool(findings(code, "XLA413")) == reported


def test_a_name_bound_to_a_list_is_reduced_in_place():
    code = SYNC_BN.replace(
        "            xm.all_reduce(xm.REDUCE_SUM, m.running_mean, scale=1.0 / xr.world_size())",
        "            stats = [m.running_mean, m.running_var]\n"
        "            xm.all_reduce(xm.REDUCE_SUM, stats)",
    )
    assert findings(code, "XLA413") == []


@pytest.mark.xla
def test_the_claim_a_single_tensor_is_not_reduced_in_place(tmp_path):
    probe = tmp_path / "reduce.py"
    probe.write_text(
        "import torch, torch_xla\n"
        "import torch_xla.core.xla_model as xm\n"
        "d = torch_xla.device()\n"
        "t = torch.ones(3, device=d)\n"
        "out = xm.all_reduce(xm.REDUCE_SUM, t, scale=0.5)\n"
        "lst = [torch.ones(3, device=d)]\n"
        "xm.all_reduce(xm.REDUCE_SUM, lst, scale=0.5)\n"
        "print(t.sum().item(), out.sum().item(), lst[0].sum().item())\n"
    )
    # One device skips collectives unless asked (xla_model.all_reduce): ask, so the
    # single-tensor and list forms run as they do on several replicas.
    env = {
        "PJRT_DEVICE": "CPU",
        "CPU_NUM_DEVICES": "1",
        "XLA_ALWAYS_ALLREDUCE": "1",
        "PATH": "/usr/bin:/bin",
    }
    run = subprocess.run(
        [sys.executable, str(probe)], capture_output=True, text=True, env=env, timeout=240
    )
    assert run.returncode == 0, run.stderr[-2000:]
    # The input keeps its values; the returned tensor and the list entry are reduced.
    assert run.stdout.split()[-3:] == ["3.0", "1.5", "1.5"]
