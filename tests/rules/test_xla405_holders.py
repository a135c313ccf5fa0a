"""XLA405: what counts as a holder of the CUDA device module, and what the findings tell the
user to do by hand."""

import re
import subprocess
import sys

from tests.helpers import findings, src


def _holder_findings(code: str) -> list:
    return [f for f in findings(code, "XLA405") if "calls into torch.cuda" in f.message]


def test_a_flag_or_tensor_type_mentioning_torch_cuda_is_not_a_device_module():
    code = """
    import torch
    cuda = True if torch.cuda.is_available() else False
    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    n_gpu = torch.cuda.device_count() or 1
    x = Tensor(3)
    """
    assert _holder_findings(code) == []
    # The availability test itself is XLA101's, never a "memory statistics" call.
    assert not any("is_available" in f.message for f in findings(code, "XLA405"))


def test_values_that_are_or_fall_back_to_torch_cuda_are_device_modules():
    code = """
    import torch
    class Trainer:
        def __init__(self, device_type, fallback):
            self.device_module = getattr(torch, device_type, torch.cuda)
            self.mod = fallback or torch.cuda
            self.other = torch.cuda if device_type == "cuda" else torch.cpu
            dm = torch.cuda
            self.device_module.empty_cache()
            self.mod.memory_allocated()
            self.other.max_memory_allocated()
            dm.reset_peak_memory_stats()
    """
    found = _holder_findings(code)
    assert [f.span.start.line + 1 for f in found] == [8, 9, 10, 11]


def test_a_holder_named_cuda_does_not_capture_torch_cuda_calls():
    code = """
    import torch
    cuda = torch.cuda
    cuda.empty_cache()
    torch.cuda.synchronize()
    """
    found = _holder_findings(code)
    assert [f.span.start.line + 1 for f in found] == [3]


def test_every_manual_text_is_a_sentence_saying_what_to_do():
    code = """
    import torch
    import torch.nn as nn
    import bitsandbytes as bnb
    from apex import amp
    import pynvml
    import xformers.ops
    from transformers import BitsAndBytesConfig
    from torch.distributed.device_mesh import init_device_mesh
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda.nvtx.range_push("fwd")
    torch.cuda.current_stream().wait_stream(s)
    start = torch.cuda.Event(enable_timing=True)
    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    print(Tensor)
    sync = torch.cuda.synchronize
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    try:
        step()
    except torch.cuda.OutOfMemoryError:
        pass
    acts = [torch.profiler.ProfilerActivity.CUDA]
    torch.set_default_tensor_type("torch.cuda.FloatTensor")
    torch.cuda.is_bf16_supported()
    q = BitsAndBytesConfig(load_in_4bit=True)
    mesh = init_device_mesh("cuda", (2,))
    out = xformers.ops.memory_efficient_attention(q, k, v)
    dm = getattr(torch, "cuda", torch.cuda)
    dm.memory_allocated()
    mod = torch.cuda
    """
    found = findings(code, "XLA405")
    assert len(found) >= 18
    for f in found:
        manual = f.manual
        assert manual, f.message
        # A sentence of its own: capitalised, ends with a full stop, not the message's tail.
        assert manual[0].isupper() and manual.endswith("."), manual
        assert manual.rstrip(".") not in f.message, manual
        assert not manual.startswith(("is ", "calls ", "marks ")), manual
    tensor_type = next(f for f in found if "FloatTensor" in f.message)
    assert "XLA device" in tensor_type.manual and "torch.float32" in tensor_type.manual


def test_the_cli_prints_whole_sentences_after_no_automatic_fix(tmp_path):
    script = tmp_path / "gan.py"
    script.write_text(
        src(
            """
            import torch
            cuda = True if torch.cuda.is_available() else False
            Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
            print(Tensor)
            sync = torch.cuda.synchronize
            """
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "xla_lens", "check", str(script), "--target", "modern"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    manuals = re.findall(r"no automatic fix: (.*)", out)
    assert len(manuals) >= 3, out
    assert all(m[0].isupper() for m in manuals), out
    assert "memory statistics" not in out


def test_a_cuda_tensor_type_alias_without_a_fix_says_why():
    code = """
    import torch
    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    print(Tensor)
    """
    (f,) = findings(code, "XLA405")
    assert "XLA101 offers no fix for this alias: Tensor is also used" in f.manual
    assert f.manual.endswith(").")
