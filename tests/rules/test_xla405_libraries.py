"""XLA405: CUDA-only libraries and kernels, here those fetched from the Hugging Face hub."""

from tests.helpers import findings


def test_a_kernel_fetched_from_the_hub_is_cuda_only():
    # held-out 14 (modded-nanogpt): get_kernel("kernels-community/flash-attn3").
    code = """
    import torch
    from kernels import get_kernel
    flash = get_kernel("kernels-community/flash-attn3").flash_attn_interface
    q = torch.randn(1, 8, 1, 64, device="cuda")
    out = flash.flash_attn_func(q, q, q, causal=True)
    """
    found = [f for f in findings(code, "XLA405") if "Hugging Face hub" in f.message]
    assert [f.span.start.line + 1 for f in found] == [3]
    assert "scaled_dot_product_attention" in found[0].manual
