"""XLA405 reports uses of a CUDA-only API, not a script rebinding or deleting the name
(monkeypatching ``torch.cuda.is_bf16_supported`` so library code takes the bf16 path on XLA)."""

from tests.helpers import findings


def lines(code: str) -> list[int]:
    return [f.span.start.line + 1 for f in findings(code, "XLA405")]


def test_assigning_a_torch_cuda_attribute_is_not_calling_it():
    code = """
    import torch
    import torch_xla

    torch.cuda.is_bf16_supported = lambda: True
    torch.cuda.synchronize = torch_xla.sync
    setattr(torch.cuda, "is_bf16_supported", lambda: True)
    del torch.cuda.nvtx
    device = torch_xla.device()
    """
    assert lines(code) == []


def test_calls_of_a_name_the_script_replaced_run_the_replacement():
    code = """
    import torch

    torch.cuda.is_bf16_supported = lambda: True
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    """
    assert lines(code) == []


def test_references_that_are_still_uses_stay_reported():
    code = """
    import torch

    check = torch.cuda.is_bf16_supported
    pick_dtype(supports_bf16=torch.cuda.is_bf16_supported)
    if torch.cuda.is_bf16_supported():
        pass
    try:
        step()
    except torch.cuda.OutOfMemoryError:
        pass
    sync = torch.cuda.synchronize
    """
    assert lines(code) == [3, 4, 5, 9, 11]
