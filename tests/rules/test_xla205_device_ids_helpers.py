"""XLA205 for DDP ``device_ids`` handed through a method or function of another module
(``task.prepare_distributed(device_ids=[device])``): reported at the call, without a fix."""

from tests.helpers import findings

TASK = """
import torch
from somelib.task import ClassificationTask

device = torch.device("cuda", local_rank)
task = ClassificationTask(model, criterion, device=device)
if distributed:
    task.prepare_distributed(device_ids=[device], broadcast_buffers=False)
    model = task.get_trainable_module()
"""


def test_device_ids_through_a_library_method_are_reported_without_a_fix():
    (f,) = findings(TASK, "XLA205")
    assert f.span.start.line + 1 == 7
    assert "`task.prepare_distributed`" in f.message and "device_ids" in f.message
    assert f.fix is None
    assert ".to(device)" in f.manual and "torch_xla.device()" in f.manual


def test_a_function_of_this_file_is_reported_at_its_ddp_call_instead():
    code = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    def wrap(model, device_ids):
        return DDP(model, device_ids=device_ids)

    model = wrap(model, device_ids=[rank])
    """
    found = findings(code, "XLA205")
    assert [f.span.start.line + 1 for f in found] == [5]


def test_torch_wrappers_none_and_xla_scripts_are_not_reported():
    code = """
    import torch
    from torch import nn
    model = nn.DataParallel(model, device_ids=[0, 1])
    out = nn.parallel.data_parallel(model, x, device_ids=[0, 1])
    task.prepare_distributed(device_ids=None)
    """
    assert [f for f in findings(code, "XLA205") if "device_ids" in f.message] == []
    xla = TASK.replace("import torch\n", "import torch\nimport torch_xla\n", 1)
    assert findings(xla, "XLA205") == []


def test_a_workspace_helper_that_builds_no_wrapper_is_not_reported(tmp_path):
    # held-out 144 (Music-Source-Separation-Training): save_weights(..., device_ids=...) of
    # utils/model_utils.py only reads len(device_ids) to pick model vs model.module.
    from xla_lens.engine import analyze
    from xla_lens.semantic import workspace, workspace_calls

    workspace_calls.clear_cache()
    workspace.clear_cache()
    (tmp_path / "utils.py").write_text(
        "import torch\n\n\ndef save_weights(path, model, device_ids):\n"
        "    state = model.state_dict() if len(device_ids) <= 1 else model.module.state_dict()\n"
        "    torch.save(state, path)\n\n\n"
        "def wrap(model, device_ids):\n"
        "    return torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)\n"
    )
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nfrom utils import save_weights, wrap\n\n"
        "model = wrap(torch.nn.Linear(2, 2).cuda(), device_ids=[rank])\n"
        'save_weights("m.pt", model, device_ids=[rank])\n'
    )
    result = analyze(script.read_text(), str(script))
    lines = [f.span.start.line + 1 for f in result.findings if f.code == "XLA205"]
    assert lines == [4], lines  # wrap() builds DDP with them; save_weights() does not
    workspace_calls.clear_cache()
    workspace.clear_cache()
