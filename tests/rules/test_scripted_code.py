"""No fix writes torch_xla code into TorchScript (held-out 62: ImageNet21K's
``@torch.jit.script class DownsampleJIT`` with ``.cuda().half()`` in ``__init__``): TorchScript
compiles the class from its source when Python defines it, and ``torch_xla.device()`` cannot be
scripted, so the module would fail to import on every host (measured on torch_xla 2.9:
"could not get source code")."""

from tests.helpers import findings, fixed, src

SCRIPTED = """
import torch


@torch.jit.script
class Down(object):
    def __init__(self, channels: int = 2):
        a = torch.tensor([1.0, 2.0, 1.0])
        self.filt = a.cuda()

    def __call__(self, x: torch.Tensor):
        return x * 2


def place(t):
    return t.cuda()
"""


def test_a_move_inside_scripted_code_gets_no_fix_and_says_why():
    moves = {f.span.start.line: f for f in findings(SCRIPTED, "XLA101")}
    scripted, plain = moves[7], moves[14]
    assert scripted.fix is None and "TorchScript (`@torch.jit.script`, line 4)" in scripted.manual
    assert plain.fix is not None and plain.fix.safe
    out = fixed(SCRIPTED, "XLA101")
    assert "self.filt = a.cuda()" in out and "return t.to(torch_xla.device())" in out


def test_the_same_class_without_the_decorator_is_fixed():
    plain = SCRIPTED.replace("@torch.jit.script\n", "")
    assert "a.to(torch_xla.device())" in fixed(plain, "XLA101")
    assert src(plain)


def test_a_move_of_a_data_parallel_wrapper_waits_for_review():
    # Held-out 62's CutMix: `model = torch.nn.DataParallel(model).cuda()`. The wrapper stays;
    # where CUDA is visible its forward wants the parameters on cuda:0 (torch's
    # data_parallel.py): with them on XLA it raises. (Not TorchScript: the same file of tests
    # keeps the engine's placement refusals together.)
    code = """
    import torch
    model = torch.nn.DataParallel(model).cuda()
    plain = model.cuda()
    """
    moves = {f.span.start.line: f for f in findings(code, "XLA101")}
    assert not moves[1].fix.safe and "nn.DataParallel stays" in moves[1].fix.review_reason
    assert moves[2].fix.safe
