"""XLA405: CUDA-only libraries and kernels (fetched from the Hugging Face hub, timm's SyncBatchNorm)."""

from tests.helpers import findings, src


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


def test_apex_use_sites_are_named_beside_its_import():
    # held-out 20 (ViT-pytorch): `model = DDP(model, ...)` of apex.parallel is where the script
    # changes; the import's finding alone left the site unreported.
    code = """
    import torch
    from apex.parallel import DistributedDataParallel as DDP, convert_syncbn_model
    from apex.optimizers import FusedAdam
    from apex.parallel.LARC import LARC

    model = convert_syncbn_model(torch.nn.Linear(2, 2))
    opt = LARC(FusedAdam(model.parameters(), lr=1e-3))
    model = DDP(model, message_size=250000000)
    """
    found = [f for f in findings(code, "XLA405") if f.span.start.line > 3]
    assert [f.span.start.line for f in found] == [5, 6, 7]
    assert "apex.parallel.convert_syncbn_model" in found[0].message
    assert "apex.optimizers.FusedAdam" in found[1].message and "torch.optim.Adam" in found[1].manual
    assert "NCCL" in found[2].message and "xm.optimizer_step" in found[2].manual
    assert all(f.fix is None for f in found)  # LARC itself is plain PyTorch: no finding


def test_timms_convert_sync_batchnorm_builds_the_same_layers():
    # Held-out 32 (efficientdet's train.py): timm's helper, imported by name.
    code = src(
        """
        import torch
        from timm.layers import convert_sync_batchnorm
        import timm.models.layers as layers

        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8))
        model = convert_sync_batchnorm(model)
        other = layers.convert_sync_batchnorm(model)
        """
    )
    found = [f for f in findings(code) if f.code == "XLA405"]
    assert [f.span.start.line for f in found] == [5, 6]
    assert all("SyncBatchNorm" in f.message and "timm" in f.message for f in found)
    assert all(f.fix is None and f.manual for f in found)


def test_apex_amp_c_kernels_are_named_at_their_import_and_each_call():
    # Held-out 39 (FastPitch): `import amp_C` then amp_C.multi_tensor_axpby(...) for the EMA,
    # every optimizer step; the apex import's finding alone left the kernel call unreported.
    code = """
    import torch
    import amp_C

    def ema(decay, weights, ema_weights, overflow):
        amp_C.multi_tensor_axpby(
            65536, overflow, [ema_weights, weights, ema_weights], decay, 1 - decay, -1)
    """
    found = findings(code, "XLA405")
    assert [f.span.start.line + 1 for f in found] == [2, 5]
    assert "apex's compiled CUDA extension" in found[0].message
    assert found[1].message.startswith("amp_C.multi_tensor_axpby() is an apex CUDA kernel")
    assert "torch._foreach_mul_" in found[1].manual and found[1].fix is None


def test_baidu_warp_ctc_cannot_take_xla_tensors():
    # Held-out 40 (deep-text-recognition-benchmark): `from warpctc_pytorch import CTCLoss` under
    # its --baiduCTC option.
    code = """
    import torch

    def criterion(opt):
        if opt.baiduCTC:
            from warpctc_pytorch import CTCLoss
            return CTCLoss()
        return torch.nn.CTCLoss(zero_infinity=True)
    """
    (f,) = findings(code, "XLA405")
    assert f.span.start.line + 1 == 5 and "warp-ctc" in f.message
    assert "torch.nn.CTCLoss" in f.manual


def test_a_deepspeed_config_handed_to_the_trainer_is_reported():
    # Held-out 41 (philschmid's FLAN-T5 script): Seq2SeqTrainingArguments(...,
    # deepspeed=args.deepspeed) launched with a ZeRO-3 offload config; accelerate sets DeepSpeed
    # up only off XLA.
    code = """
    from transformers import Seq2SeqTrainingArguments, TrainingArguments

    a = Seq2SeqTrainingArguments(output_dir="out", deepspeed=args.deepspeed)
    b = TrainingArguments(output_dir="out", deepspeed="ds_zero3.json")
    c = TrainingArguments(output_dir="out", deepspeed=None)
    """
    found = [f for f in findings(code, "XLA405") if "DeepSpeed" in f.message]
    assert [f.span.start.line + 1 for f in found] == [3, 4]
    assert "(whenever `args.deepspeed` names one)" in found[0].message
    assert "whenever" not in found[1].message
    assert all(f.fix is None and "fsdp_config" in f.manual for f in found)
