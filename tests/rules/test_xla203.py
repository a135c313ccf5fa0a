from tests.helpers import findings, fixed, src

CODE = """
import torch.utils.data as tud
from torch.utils.data.distributed import DistributedSampler as DS

sampler = DS(train_ds)
loader = tud.DataLoader(train_ds, batch_size=8, sampler=sampler, shuffle=True)
"""


def test_sampler_and_loader_fixed_modern():
    found = findings(CODE, "XLA203")
    assert [f.span.start.line for f in found] == [3, 4]
    assert fixed(CODE, "XLA203") == src(
        """
        import torch.utils.data as tud
        from torch.utils.data.distributed import DistributedSampler as DS
        import torch_xla.runtime as xr

        sampler = DS(train_ds, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
        loader = tud.DataLoader(train_ds, batch_size=8, sampler=sampler, shuffle=False)
        """
    )


def test_legacy_target_and_only_the_missing_keywords():
    code = """
    import torch
    s = torch.utils.data.DistributedSampler(ds, rank=my_rank, shuffle=False)
    """
    out = fixed(code, "XLA203", target="legacy")
    assert (
        "DistributedSampler(ds, rank=my_rank, shuffle=False, num_replicas=xm.xrt_world_size())"
        in out
    )
    assert "import torch_xla.core.xla_model as xm\n" in out


def test_inline_sampler_call_in_loader():
    code = """
    from torch.utils.data import DataLoader, DistributedSampler
    loader = DataLoader(ds, sampler=DistributedSampler(ds, 4, 0), shuffle=True)
    """
    out = fixed(code, "XLA203")
    assert "DataLoader(ds, sampler=DistributedSampler(ds, 4, 0), shuffle=False)" in out


def test_converted_or_unrelated_code_reports_nothing():
    code = """
    from torch.utils.data import DataLoader, DistributedSampler, RandomSampler
    import torch_xla.runtime as xr
    s = DistributedSampler(ds, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
    a = DataLoader(ds, sampler=s, shuffle=False)
    b = DataLoader(ds, sampler=RandomSampler(ds), shuffle=True)
    c = DataLoader(ds, shuffle=True)
    d = DistributedSampler(ds, **sampler_kwargs)
    """
    assert findings(code, "XLA203") == []
