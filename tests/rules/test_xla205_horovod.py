"""Horovod (held-out 148's UNITER): no XLA backend, so its import, ``hvd.init()``, its
optimizer wrapper and each collective are reported with torch_xla's replacement, never
fixed; a helper of another file that runs a Horovod collective is named at its call
(XLA118)."""

import pytest
from xla_lens.engine.analysis import analyze

from tests.helpers import findings, src

SCRIPT = src("""
import torch
import horovod.torch as hvd

hvd.init()
torch.cuda.set_device(hvd.local_rank())
model = torch.nn.Linear(4, 4).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * hvd.size())
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
loss = model(torch.ones(2, 4).cuda()).sum()
total = hvd.allreduce(loss.detach(), name="loss")
if hvd.rank() == 0:
    print(total)
""")


def _by_line(code: str) -> dict[str, str]:
    lines = code.splitlines()
    return {lines[f.span.start.line].strip(): f.message for f in findings(code, "XLA205")}


def test_each_horovod_site_is_reported_without_a_fix():
    found = findings(SCRIPT, "XLA205")
    assert all(f.fix is None and f.manual for f in found)
    by_line = _by_line(SCRIPT)
    assert "has no XLA backend" in by_line["import horovod.torch as hvd"]
    init = by_line["hvd.init()"]
    assert "hvd.local_rank() (line 5) → xr.local_ordinal()" in init
    assert "hvd.size() (line 7) → xr.world_size()" in init
    assert "hvd.rank() (line 12) → xr.global_ordinal()" in init
    assert (
        "all-reduces the gradients through Horovod"
        in by_line[
            "optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())"
        ]
    )
    assert (
        "broadcasts the model's parameters"
        in by_line["hvd.broadcast_parameters(model.state_dict(), root_rank=0)"]
    )
    (allreduce,) = [f for f in found if "Horovod collective" in f.message]
    assert "xm.all_reduce(xm.REDUCE_SUM, tensor)" in allreduce.manual
    assert "averages by default" in allreduce.manual


def test_the_from_import_form_and_in_place_collectives():
    code = SCRIPT.replace("import horovod.torch as hvd", "from horovod import torch as hvd")
    code = code.replace("total = hvd.allreduce(", "total = hvd.grouped_allreduce_async_(")
    found = findings(code, "XLA205")
    assert len(found) == 5
    assert any("hvd.grouped_allreduce_async_() is a Horovod collective" in f.message for f in found)


def test_a_script_without_horovod_gets_none_of_this():
    code = SCRIPT.replace("import horovod.torch as hvd", "import my_hvd as hvd")
    assert not [f for f in findings(code, "XLA205") if "Horovod" in f.message]


HELPERS = src("""
from horovod import torch as hvd


def broadcast_tensors(tensors, root_rank):
    for t in tensors:
        hvd.broadcast_(t, root_rank)
""")


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_a_helper_running_a_horovod_collective_is_named_at_its_call(tmp_path):
    (tmp_path / "dist_utils.py").write_text(HELPERS)
    text = src("""
    import torch
    from dist_utils import broadcast_tensors

    model = torch.nn.Linear(4, 4)
    broadcast_tensors([p.data for p in model.parameters()], 0)
    """)
    path = tmp_path / "train.py"
    path.write_text(text)
    (helper,) = [f for f in analyze(text, str(path)).findings if f.code == "XLA118"]
    assert "hvd.broadcast_() is a Horovod collective (XLA205)" in helper.message
