"""XLA405: ``torch.cuda.device(i)`` makes a CUDA device current. On an XLA host it initialises
CUDA and raises ("Found no NVIDIA driver") unless the index is -1 or None, when it does nothing.
The fix drops the ``with`` and keeps its body; it is safe only when nothing in the body reads
the current CUDA device."""

from __future__ import annotations

from tests.helpers import findings, fixed, src

CONTEXT = """
import torch

def run(model, x, card):
    with torch.cuda.device(card):
        y = model(x)
        # the loss
        print(y.sum().item())
    return y
"""


def test_cuda_device_context_is_reported_and_dropped_keeping_its_body() -> None:
    [f] = findings(CONTEXT, "XLA405")
    assert "torch.cuda.device" in f.message and "Found no NVIDIA driver" in f.message
    assert f.fix is not None and f.fix.safe, f.fix
    out = fixed(CONTEXT, "XLA405")
    assert out == src(
        """
        import torch

        def run(model, x, card):
            y = model(x)
            # the loss
            print(y.sum().item())
            return y
        """
    )


def test_body_that_reads_the_current_cuda_device_needs_review() -> None:
    code = CONTEXT.replace(
        "        print(y.sum().item())\n", "        print(torch.cuda.memory_allocated())\n"
    )
    [f] = findings(code, "XLA405")
    assert f.fix is not None and not f.fix.safe
    assert "torch.cuda.memory_allocated()" in f.fix.review_reason
    assert fixed(code, "XLA405") == src(code)


def test_body_calling_a_local_function_that_uses_cuda_needs_review() -> None:
    code = """
    import torch

    def step(x):
        return x.cuda() * 2

    with torch.cuda.device(1):
        step(torch.ones(2))
    """
    [f] = findings(code, "XLA405")
    assert f.fix is not None and not f.fix.safe
    assert "step" in f.fix.review_reason


def test_with_other_items_keeps_them() -> None:
    code = """
    import torch

    with torch.cuda.device(0), open("log.txt", "w") as fh:
        fh.write("x")
    """
    out = fixed(code, "XLA405")
    assert 'with open("log.txt", "w") as fh:\n    fh.write("x")' in out
    assert "cuda" not in out


def test_call_outside_a_with_is_reported_without_fix() -> None:
    code = """
    import torch

    ctx = torch.cuda.device(0)
    ctx.__enter__()
    """
    [f] = findings(code, "XLA405")
    assert f.fix is None and f.manual


def test_a_constant_minus_one_is_said_to_do_nothing() -> None:
    code = """
    import torch

    with torch.cuda.device(-1):
        print(1)
    """
    [f] = findings(code, "XLA405")
    assert "does nothing" in f.message and f.fix is not None and f.fix.safe


def test_a_comment_at_column_zero_inside_the_body_keeps_the_fix_valid() -> None:
    code = "import torch\n\nwith torch.cuda.device(0):\n    a = 1\n# note\n    b = a\n"
    out = fixed(code, "XLA405")
    assert "a = 1\n" in out and "b = a" in out and "cuda" not in out


def test_review_fix_with_other_rules_editing_the_body_converges() -> None:
    code = """
    import torch

    net = torch.nn.Linear(4, 1)
    with torch.cuda.device(0):
        net = net.cuda()
        print(net(torch.ones(1, 4, device="cuda")))
    """
    out = fixed(code, unsafe=True)
    assert "cuda" not in out.replace("torch_xla", "")
    assert "net = net.to(" in out
