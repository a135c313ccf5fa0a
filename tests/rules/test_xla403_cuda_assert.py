"""XLA403: ``assert torch.cuda.is_available()`` stops the converted script on an XLA host
(held-out llm.c: the assert guards the DDP branch whose backend the safe fixes turn to "xla",
so the converted DDP path still died with an AssertionError and nothing said so)."""

from __future__ import annotations

from tests.helpers import findings, fixed

DDP_BRANCH = """
import os
import torch
from torch.distributed import init_process_group

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    # use of DDP atm demands CUDA
    assert torch.cuda.is_available(), "for now i think we need CUDA for DDP"
    init_process_group(backend="nccl")
"""


def _asserts(text: str):
    return [f for f in findings(text, "XLA403") if "assert" in f.message]


def test_a_cuda_availability_assert_is_reported_with_a_safe_removal():
    (f,) = _asserts(DDP_BRANCH)
    assert f.span.start.line + 1 == 8
    assert "AssertionError" in f.message and "XLA host" in f.message
    assert f.fix is not None and f.fix.safe
    converted = fixed(DDP_BRANCH, "XLA403")
    assert "assert torch.cuda.is_available()" not in converted
    # The comment above the removed statement stays; the branch keeps its other statements.
    assert "    # use of DDP atm demands CUDA\n    init_process_group(" in converted


def test_a_sole_assert_in_a_block_leaves_a_valid_block():
    code = """
    import torch

    def setup(ddp):
        if ddp:
            assert torch.cuda.is_available()
        return ddp
    """
    (f,) = _asserts(code)
    assert f.fix.safe
    converted = fixed(code, "XLA403")  # parses (checked by the helper)
    assert "assert" not in converted


def test_an_assert_with_other_conditions_is_manual():
    code = """
    import torch

    def setup(world_size):
        assert torch.cuda.is_available() and world_size > 1, "need GPUs"
    """
    (f,) = _asserts(code)
    assert f.fix is None and "world_size > 1" in f.manual


def test_an_assert_used_as_control_flow_is_for_review():
    code = """
    import torch

    try:
        assert torch.cuda.is_available()
        use_cuda = True
    except AssertionError:
        use_cuda = False
    """
    (f,) = _asserts(code)
    assert f.fix is not None and not f.fix.safe
    assert "AssertionError" in f.fix.review_reason


def test_asserts_that_never_run_on_xla_or_ask_something_else_are_not_reported():
    code = """
    import torch

    if torch.cuda.is_available():
        assert torch.cuda.is_available()
    assert not torch.cuda.is_available() or True
    x = 1
    assert x == 1
    """
    assert _asserts(code) == []


# A held-out miss (vits-style): the assert guards a replica count read from CUDA. On an XLA
# host torch.cuda.device_count() is 0, so without the assert the launcher starts no process
# and the script exits 0 having trained nothing, where the original stopped with its message.
COUNT_AFTER = """
import torch
import torch.multiprocessing as mp


def worker(rank, world):
    print("replica", rank, "of", world)


def launch():
    assert torch.cuda.is_available(), "a GPU is required"
    world = torch.cuda.device_count()
    mp.spawn(worker, args=(world,), nprocs=world)
"""


def test_an_assert_with_a_later_device_count_is_for_review_and_names_the_line():
    (f,) = _asserts(COUNT_AFTER)
    assert f.fix is not None and not f.fix.safe
    reason = f.fix.review_reason
    assert "line 11: torch.cuda.device_count() is 0 on an XLA host" in reason
    assert "mp.spawn(nprocs=0) would start no process" in reason
    assert "line 11" in f.message
    # fix-all keeps the assert: the script still stops with its message.
    assert 'assert torch.cuda.is_available(), "a GPU is required"' in fixed(COUNT_AFTER, "XLA403")
    assert "assert torch.cuda" not in fixed(COUNT_AFTER, "XLA403", unsafe=True)


def test_later_cuda_queries_and_cuda_moves_keep_the_assert():
    for later, what in [
        ("idx = torch.cuda.current_device()", "torch.cuda.current_device() raises"),
        ("name = torch.cuda.get_device_name(0)", "torch.cuda.get_device_name() raises"),
        ("net = build().cuda()", ".cuda() raises"),
        ("ok = torch.cuda.set_device(0)", "torch.cuda.set_device() raises"),
        ("n = torch.accelerator.device_count()", "torch.accelerator.device_count() is 0"),
    ]:
        code = f"""
        import torch

        def main():
            assert torch.cuda.is_available()
            {later}
        """
        (f,) = _asserts(code)
        assert not f.fix.safe, later
        assert f"line 5: {what}" in f.fix.review_reason, f.fix.review_reason
    # A CUDA use in a function defined above may run after the assert (it is called later).
    above = """
    import torch

    def count():
        return torch.cuda.device_count()

    assert torch.cuda.is_available()
    print(count())
    """
    (f,) = _asserts(above)
    assert not f.fix.safe and "line 4: torch.cuda.device_count()" in f.fix.review_reason


def test_cuda_uses_that_are_gone_or_never_run_on_xla_leave_the_removal_safe():
    code = """
    import torch

    def main():
        n = torch.cuda.device_count()  # before the assert: it ran on the original too
        assert torch.cuda.is_available()
        torch.cuda.set_device(0)  # XLA403 removes this statement itself
        if torch.cuda.is_available():
            print(torch.cuda.get_device_name(0))
        return n
    """
    (f,) = _asserts(code)
    assert f.fix.safe, f.fix.review_reason


def test_a_cuda_count_anded_with_availability_goes_with_it():
    """Held-out 80 (po2_quantization): ``assert torch.cuda.is_available() and
    torch.cuda.device_count() >= 1`` - keeping the count would still fail (0 on XLA)."""
    text = """
    import torch
    assert torch.cuda.is_available() and torch.cuda.device_count() >= 1, "invalid hardware"
    """
    (f,) = findings(text, "XLA403")
    assert "`torch.cuda.device_count() >= 1` too" in f.manual and "drop the assert" in f.manual
    assert "keep the other conditions" not in f.manual
    text = text.replace("torch.cuda.device_count() >= 1", "torch.cuda.device_count() >= 1 and ok")
    (f,) = findings(text, "XLA403")
    assert f.manual.count("assert ok") == 1
