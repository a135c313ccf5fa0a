"""XLA403: a CUDA seed under a CUDA availability guard (held-out 18: bearpaw's ``if use_cuda:``,
ViT-pytorch's ``if args.n_gpu > 0:``) would give an XLA seed that never runs."""

from tests.helpers import findings, fixed

GUARDED = """
import torch
use_cuda = torch.cuda.is_available()
torch.manual_seed(0)
if use_cuda:
    torch.cuda.manual_seed_all(0)
model = torch.nn.Linear(4, 1)
"""


def test_a_guard_holding_only_the_seed_becomes_the_xla_seed():
    (f,) = findings(GUARDED, "XLA403")
    assert f.fix is not None and f.fix.safe
    assert "sits under `if use_cuda:`" in f.message
    out = fixed(GUARDED, "XLA403")
    assert "if use_cuda:" not in out
    assert "torch.manual_seed(0)\ntorch_xla.manual_seed(0)\nmodel = " in out


def test_an_n_gpu_guard_set_from_the_device_count():
    code = """
    import torch
    class A: pass
    args = A()
    args.n_gpu = torch.cuda.device_count()
    def set_seed(args):
        torch.manual_seed(args.seed)
        if args.n_gpu > 0:
            torch.cuda.manual_seed_all(args.seed)
    """
    out = fixed(code, "XLA403")
    assert "    torch.manual_seed(args.seed)\n    torch_xla.manual_seed(args.seed)\n" in out


def test_a_guard_holding_more_than_the_seed_is_offered_for_review():
    code = GUARDED.replace(
        "    torch.cuda.manual_seed_all(0)",
        "    torch.cuda.manual_seed_all(0)\n    torch.backends.cudnn.benchmark = True",
    )
    (f,) = findings(code, "XLA403")
    assert not f.fix.safe and "move the XLA seed out of that block" in f.fix.review_reason
    assert "torch.cuda.manual_seed_all(0)" in fixed(code, "XLA403")


def test_an_unguarded_seed_is_rewritten_in_place():
    code = GUARDED.replace("if use_cuda:\n    torch.cuda", "torch.cuda")
    (f,) = findings(code, "XLA403")
    assert f.fix.safe and "sits under" not in f.message
    assert "torch_xla.manual_seed(0)" in fixed(code, "XLA403")


def test_a_seed_in_the_launchers_parent_process_gets_no_fix():
    # Measured on torch_xla 2.9: torch_xla.manual_seed(0) before xmp.spawn raises "Runtime is
    # already initialized. Do not use the XLA device before calling xmp.spawn".
    code = """
    import torch
    import torch_xla
    import torch_xla.distributed.xla_multiprocessing as xmp
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)

    def _mp_fn(index):
        model = torch.nn.Linear(2, 2).to(torch_xla.device())

    if __name__ == "__main__":
        xmp.spawn(_mp_fn, args=())
    """
    # Not even for review: accepted, it would crash every launch.
    (f,) = findings(code, "XLA403")
    assert f.fix is None and "launcher's parent process" in f.message
    assert "function each replica runs" in f.manual
    assert "torch.cuda.manual_seed_all(0)" in fixed(code, "XLA403")
