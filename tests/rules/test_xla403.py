from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

CODE = """
import torch
from torch.backends import cudnn
from torch.utils.data import DataLoader

torch.backends.cudnn.benchmark = True
cudnn.deterministic = True  # reproducible
torch.cuda.manual_seed_all(args.seed)
loader = DataLoader(ds, batch_size=8, pin_memory=True, num_workers=2)
torch.cuda.set_device(local_rank)
for x in loader:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
"""


def test_cuda_only_calls_are_found():
    found = findings(CODE, "XLA403")
    assert [f.span.start.line for f in found] == [4, 5, 6, 7, 8, 10, 11, 12]
    assert all(f.fix is not None for f in found)


def test_modern_fix_removes_and_seeds_with_torch_xla():
    assert fixed(CODE, "XLA403") == src(
        """
        import torch
        from torch.backends import cudnn
        from torch.utils.data import DataLoader
        import torch_xla

        # reproducible
        torch_xla.manual_seed(args.seed)
        loader = DataLoader(ds, batch_size=8, num_workers=2)
        for x in loader:
            pass
        """
    )


def test_legacy_fix_seeds_with_set_rng_state():
    out = fixed(CODE, "XLA403", target="legacy")
    assert "xm.set_rng_state(args.seed)\n" in out
    assert "import torch_xla.core.xla_model as xm\n" in out
    assert "torch.cuda" not in out


def test_memory_and_device_queries_are_manual_per_target():
    code = """
    import torch
    print(torch.cuda.max_memory_allocated() / 2**30)
    n = torch.cuda.device_count()
    """
    mem, count = findings(code, "XLA403")
    assert mem.fix is None and "xm.get_memory_info(device)" in mem.manual
    assert "xr.world_size()" in count.manual
    (_, legacy_count) = findings(code, "XLA403", target="legacy")
    assert "xm.xrt_world_size()" in legacy_count.manual


def test_call_used_as_a_value_is_not_removed():
    code = """
    import torch
    ok = torch.cuda.synchronize() or True
    """
    (f,) = findings(code, "XLA403")
    assert f.fix is None and f.manual


def test_converted_and_guarded_code_reports_nothing():
    code = """
    import torch
    import torch_xla
    from torch.utils.data import DataLoader

    torch_xla.manual_seed(0)
    loader = DataLoader(ds, batch_size=8, pin_memory=False)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.backends.cudnn.benchmark = True
    use_gpu = torch.cuda.is_available()
    torch.manual_seed(0)
    """
    assert findings(code, "XLA403") == []


def test_hover():
    hover = get_rule("XLA403").hover
    assert "torch_xla.manual_seed" in hover["torch.cuda.manual_seed"]
    assert "torch.cuda.is_available" not in hover


def test_a_cuda_seed_under_an_availability_check_still_leaves_xla_unseeded():
    code = """
    import torch
    torch.manual_seed(1337)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(1337)
        torch.cuda.empty_cache()
    """
    (f,) = findings(code, "XLA403")
    assert "unseeded" in f.message and f.fix is None
    assert "torch_xla.manual_seed(1337)" in f.manual


def test_a_device_count_under_an_availability_check_is_skipped_on_xla():
    code = """
    import torch
    num_gpus = 1
    if torch.cuda.is_available():
        num_gpus = torch.cuda.device_count()
    """
    (f,) = findings(code, "XLA403")
    assert "skipped" in f.message and "xr.world_size()" in f.manual
