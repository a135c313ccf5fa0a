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
