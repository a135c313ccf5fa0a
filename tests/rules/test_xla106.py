from tests.helpers import findings, fixed, src

DISTRIBUTED = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from tqdm import tqdm

dist.init_process_group("xla")
device = torch.device("cpu")
loader = DataLoader(ds, batch_size=8)
for epoch in range(2):
    for step, (x, y) in enumerate(tqdm(loader)):
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
"""


def test_loader_through_enumerate_and_tqdm_is_wrapped_modern():
    (f,) = findings(DISTRIBUTED, "XLA106")
    assert (
        src(DISTRIBUTED).splitlines()[f.span.start.line][f.span.start.col : f.span.end.col]
        == "loader"
    )
    out = fixed(DISTRIBUTED, "XLA106")
    assert out == src(DISTRIBUTED).replace(
        "from tqdm import tqdm\n",
        "from tqdm import tqdm\nimport torch_xla.distributed.parallel_loader as pl\n",
    ).replace("enumerate(tqdm(loader))", "enumerate(tqdm(pl.MpDeviceLoader(loader, device)))")


def test_legacy_target_wraps_the_same_way_and_reports_nothing_after():
    out = fixed(DISTRIBUTED, "XLA106", target="legacy")
    assert "enumerate(tqdm(pl.MpDeviceLoader(loader, device)))" in out
    assert findings(out, "XLA106", target="legacy") == []


def test_without_a_bound_device_variable_the_target_device_call_is_used():
    code = """
    import torch.distributed as dist
    import torch.utils.data as tud

    def train(model, optimizer):
        for batch in tud.DataLoader(ds):
            model(batch).sum().backward()
            optimizer.step()

    dist.init_process_group("xla")
    """
    modern = fixed(code, "XLA106")
    assert "for batch in pl.MpDeviceLoader(tud.DataLoader(ds), torch_xla.device()):" in modern
    assert "import torch_xla\n" in modern
    legacy = fixed(code, "XLA106", target="legacy")
    assert "for batch in pl.MpDeviceLoader(tud.DataLoader(ds), xm.xla_device()):" in legacy


def test_loader_parameter_without_visible_callers_is_offered_for_review_only():
    code = """
    import torch_xla.distributed.xla_multiprocessing as xmp
    import torch_xla.distributed.parallel_loader as P

    def train_one_epoch(model, train_loader, optimizer, device):
        for x in train_loader:
            model(x).sum().backward()
            optimizer.step()
    """
    (f,) = findings(code, "XLA106")
    # A caller outside this file may already wrap the loader: wrapping twice breaks training.
    assert f.fix is not None and not f.fix.safe
    assert "MpDeviceLoader" in f.fix.review_reason and "caller" in f.fix.review_reason
    assert fixed(code, "XLA106") == src(code)
    out = fixed(code, "XLA106", unsafe=True)
    # The script's own alias for parallel_loader is reused; no new import.
    assert "for x in P.MpDeviceLoader(train_loader, device):" in out
    assert out.count("import") == 2


CALLER = """
import torch.distributed as dist
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader

def train_one_epoch(model, loader, optimizer, device):
    for x in loader:
        model(x).sum().backward()
        optimizer.step()

def main():
    dist.init_process_group("xla", init_method="xla://")
    for epoch in range(3):
        train_one_epoch(model, {loader}, optimizer, device)
"""


def test_loader_parameter_already_wrapped_by_the_caller_reports_nothing():
    code = CALLER.format(loader="pl.MpDeviceLoader(DataLoader(ds), device)")
    assert findings(code, "XLA106") == []
    assert findings(code, "XLA107") == []


def test_loader_parameter_that_every_caller_passes_as_a_dataloader_is_wrapped_safely():
    code = CALLER.format(loader="DataLoader(ds)")
    (f,) = findings(code, "XLA106")
    assert f.fix is not None and f.fix.safe
    assert "for x in pl.MpDeviceLoader(loader, device):" in fixed(code, "XLA106")
    # The epoch loop around the call is not a training-step loop: no second sync.
    assert findings(code, "XLA107") == []


def test_wrapped_loaders_and_single_device_scripts_report_nothing():
    wrapped = """
    import torch_xla.distributed.xla_multiprocessing as xmp
    import torch_xla.distributed.parallel_loader as pl
    from torch.utils.data import DataLoader

    loader = DataLoader(ds)
    train_loader = pl.MpDeviceLoader(loader, device)
    para = pl.ParallelLoader(loader, [device])
    for x in train_loader:
        model(x).sum().backward()
    for x in para.per_device_loader(device):
        model(x).sum().backward()
    for x in pl.MpDeviceLoader(loader, device):
        model(x).sum().backward()
    """
    assert findings(wrapped, "XLA106") == []
    single = """
    from torch.utils.data import DataLoader
    loader = DataLoader(ds)
    for x in loader:
        model(x).sum().backward()
    """
    assert findings(single, "XLA106") == []


def test_evaluation_loops_are_left_alone():
    code = """
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    dist.init_process_group("xla")
    val_loader = DataLoader(ds)
    for x in val_loader:
        print(model(x))
    """
    assert findings(code, "XLA106") == []
