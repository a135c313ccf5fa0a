import os
import subprocess
import sys

import pytest

from tests.helpers import findings, fixed, src

DISTRIBUTED = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from tqdm import tqdm

dist.init_process_group("xla")
device = torch.device("cuda")
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
    # The training sits at module level: its device picker runs in the launcher's parent,
    # where XLA101's fix waits for review, and so does the wrap (it needs the XLA device).
    assert "XLA101's fix, which is left for review" in f.fix.review_reason
    out = fixed(DISTRIBUTED, "XLA106", unsafe=True)
    assert out == src(DISTRIBUTED).replace(
        "from tqdm import tqdm\n",
        "from tqdm import tqdm\nimport torch_xla.distributed.parallel_loader as pl\n",
    ).replace("enumerate(tqdm(loader))", "enumerate(tqdm(pl.MpDeviceLoader(loader, device)))")


def test_legacy_target_wraps_the_same_way_and_reports_nothing_after():
    out = fixed(DISTRIBUTED, "XLA106", target="legacy", unsafe=True)
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

    if __name__ == "__main__":
        xmp.spawn(run_replica)
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
import torch_xla
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader

def train_one_epoch(model, loader, optimizer, device):
    for x in loader:
        model(x).sum().backward()
        optimizer.step()

def main():
    dist.init_process_group("xla", init_method="xla://")
    device = torch_xla.device()
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


PICKED = """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(loader, model, opt, device):
    for x, y in loader:
        model(x.to(device)).sum().backward()
        opt.step()


def main():
    use_accel = torch.accelerator.is_available()
    if use_accel:
{extra}        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    loader = DataLoader(ds, sampler=DistributedSampler(ds))
    train(loader, model, opt, device)
"""


def test_device_parameter_the_safe_picker_fix_makes_xla_gets_a_safe_wrap():
    code = PICKED.format(extra="")
    (f,) = findings(code, "XLA106")
    assert f.fix is not None and f.fix.safe, f.fix
    out = fixed(code)  # every safe fix: the picker and the wrap together
    assert "    device = torch_xla.device()\n" in out
    assert "for x, y in pl.MpDeviceLoader(loader, device):" in out
    legacy = fixed(code, target="legacy")
    assert "device = xm.xla_device()" in legacy
    assert "for x, y in pl.MpDeviceLoader(loader, device):" in legacy


def test_device_picker_left_for_review_makes_the_wrap_review_only():
    # pytorch/examples imagenet: the picker block also selects a CUDA index, so XLA101 waits
    # for review; the device stays the CPU and MpDeviceLoader would fail at the first batch.
    code = PICKED.format(extra="        torch.accelerator.set_device_index(0)\n")
    (f,) = findings(code, "XLA106")
    assert f.fix is not None and not f.fix.safe
    assert "XLA101" in f.fix.review_reason and "at::kXLA" in f.fix.review_reason
    assert "line 14" in f.fix.review_reason
    # Fix-all reaches a consistent state: XLA403 removes the set_device_index call, then the
    # picker's fix is safe, and only then the wrap (never the wrap with a CPU device).
    out = fixed(code)
    assert "MpDeviceLoader(" in out and "    device = torch_xla.device()\n" in out
    # Left unwrapped, the loop marks the step itself.
    assert len(findings(code, "XLA107")) == 1
    for target in ("modern", "legacy"):
        (f,) = findings(code, "XLA106", target=target)
        assert not f.fix.safe


def test_device_that_stays_on_the_cpu_or_cannot_be_followed_makes_the_wrap_review_only():
    cpu = DISTRIBUTED.replace('torch.device("cuda")', 'torch.device("cpu")')
    (f,) = findings(cpu, "XLA106")
    assert not f.fix.safe and 'torch.device("cpu")' in f.fix.review_reason
    # A flag picker whose else branch stays the CPU: XLA101 keeps the user's flag.
    flag = """
    import argparse
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader

    def train():
        args = argparse.ArgumentParser().parse_args()
        use_accel = not args.no_accel and torch.accelerator.is_available()
        if use_accel:
            device = torch.accelerator.current_accelerator()
        else:
            device = torch.device("cpu")
        dist.init_process_group("xla")
        for x in DataLoader(ds):
            model(x.to(device)).sum().backward()
            opt.step()

    if __name__ == "__main__":
        train()
    """
    (f,) = findings(flag, "XLA106")
    assert not f.fix.safe and "line 12" in f.fix.review_reason
    # A device parameter nobody in this file passes.
    orphan = """
    import torch.distributed as dist
    from torch.utils.data import DataLoader

    def train(model, opt, device):
        for x in DataLoader(ds):
            model(x.to(device)).sum().backward()
            opt.step()

    dist.init_process_group("xla")
    """
    (f,) = findings(orphan, "XLA106")
    assert not f.fix.safe and "parameter of train()" in f.fix.review_reason


def test_loader_handed_in_to_an_xla_script_is_left_alone_unless_the_loop_syncs_itself():
    # pytorch/xla examples/train_resnet_amp.py: the base class passes a pl.MpDeviceLoader.
    # Its xm.RateTracker is torch_xla API that no xla-lens fix writes: written for XLA.
    xla = """
    import itertools
    import torch_xla
    import torch_xla.core.xla_model as xm

    class AmpTrainer(BaseTrainer):
        def train_loop_fn(self, loader, epoch):
            tracker = xm.RateTracker()
            loader = itertools.islice(loader, self.num_steps)
            for step, (x, y) in enumerate(loader):
                self.model(x).sum().backward()
                self.optimizer.step()
                xm.add_step_closure(print, args=(step,))

    torch_xla.launch(AmpTrainer().start)
    """
    assert findings(xla, "XLA106") == []
    assert findings(xla, "XLA107") == []
    # Without it, only what a conversion writes (the launcher, a step closure, the imports):
    # the same file as a CUDA script with those fixes applied, so the review finding stays.
    converted = xla.replace("tracker = xm.RateTracker()", "pass")
    (f,) = findings(converted, "XLA106")
    assert not f.fix.safe and "outside this function" in f.fix.review_reason
    # After xla-lens converted a CUDA script its loop syncs (XLA107's fix): the loader it
    # is handed may still be a plain DataLoader, so the review finding stays.
    synced = xla.replace(
        "xm.add_step_closure(print, args=(step,))",
        "xm.add_step_closure(print, args=(step,))\n                torch_xla.sync()",
    )
    (f,) = findings(synced, "XLA106")
    assert not f.fix.safe and "outside this function" in f.fix.review_reason


def test_a_crash_in_xla101_leaves_the_wrap_for_review_instead_of_crashing_xla106(monkeypatch):
    from xla_lens.rules.parts import device_after_fixes

    def broken(model, ctx):
        raise RuntimeError("boom")
        yield

    monkeypatch.setattr(device_after_fixes, "device_check", broken)
    (f,) = findings(PICKED.format(extra=""), "XLA106")
    assert not f.fix.safe


def test_a_device_fix_the_user_silenced_is_not_counted_on():
    """The wrap is safe only because XLA101's picker fix makes the device XLA: with that fix
    turned off (ignore comment, or XLA101 disabled) the device stays the CPU, so the wrap
    would crash at the first batch; it waits for review and XLA107 syncs the loop instead."""
    from xla_lens.engine import analyze
    from xla_lens.engine.config import Settings

    ignored = PICKED.format(extra="").replace(
        "    if use_accel:\n", "    if use_accel:  # xla-lens: ignore[XLA101]\n"
    )
    assert findings(ignored, "XLA101") == []
    (f,) = findings(ignored, "XLA106")
    assert not f.fix.safe and "XLA device" in f.fix.review_reason
    assert [g.fix.safe for g in findings(ignored, "XLA107")] == [True]

    disabled = analyze(src(PICKED.format(extra="")), settings=Settings(ignore=("XLA101",)))
    (f,) = [g for g in disabled.findings if g.code == "XLA106"]
    assert not f.fix.safe


def test_loader_wrap_waits_when_launch_safety_holds_the_device_fix_back():
    # A distributed script with its training at module level: the device picker runs in the
    # launcher's parent, so the engine leaves XLA101's fix for review; the loader wrap must
    # not count on it (MpDeviceLoader with the CUDA device fails at the first batch).
    code = """
    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    device = torch.device("cuda")
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    model = model.to(device)
    for epoch in range(2):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """
    device_fix = next(f for f in findings(code) if f.code == "XLA101")
    assert not device_fix.fix.safe and "launcher's parent" in device_fix.fix.review_reason
    (wrap,) = findings(code, "XLA106")
    assert not wrap.fix.safe
    assert "XLA101's fix, which is left for review" in wrap.fix.review_reason
    assert "MpDeviceLoader" not in fixed(code)


def test_a_logging_generator_over_the_loader_gets_the_loader_inside_it_wrapped():
    # held-out 10 r4 (DINO's metric_logger.log_every(data_loader, ...)): wrapping the generator
    # let the loader thread drain it ahead of the steps (every log line said "loss None");
    # the loader inside is wrapped, for review (the generator now sees device batches).
    code = """
    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    def log_every(iterable, every):
        for i, obj in enumerate(iterable):
            yield obj

    def train(model, ds, opt):
        loader = DataLoader(ds, sampler=DistributedSampler(ds), batch_size=4)
        for x, y in log_every(loader, 10):
            loss = model(x.cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
    (f,) = findings(code, "XLA106")
    assert not f.fix.safe and "`log_every(...)` now receives device batches" in f.fix.review_reason
    out = fixed(code, "XLA106", unsafe=True)
    assert "in log_every(pl.MpDeviceLoader(loader, torch_xla.device()), 10):" in out


def test_a_progress_bar_bound_to_a_name_gets_the_loader_inside_it_wrapped():
    # held-out 20 (ViT-pytorch): `epoch_iterator = tqdm(train_loader, ...)`, then
    # `for step, batch in enumerate(epoch_iterator):` and `epoch_iterator.set_description(...)`.
    code = """
    import torch
    import torch.distributed as dist
    from tqdm import tqdm
    from loaders import get_loader

    def train(model, opt, args):
        dist.init_process_group("nccl")
        train_loader, test_loader = get_loader(args)
        epoch_iterator = tqdm(train_loader, desc="Training")
        for step, (x, y) in enumerate(epoch_iterator):
            loss = model(x.cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            epoch_iterator.set_description("loss=%.3f" % 1.0)
    """
    (f,) = findings(code, "XLA106")
    assert not f.fix.safe and "`tqdm(...)` now receives device batches" in f.fix.review_reason
    out = fixed(code, "XLA106", unsafe=True)
    assert "tqdm(pl.MpDeviceLoader(train_loader, torch_xla.device()), desc=" in out
    assert "epoch_iterator.set_description(" in out
    # Bound twice in the function: which one the loop sees is not followed.
    twice = code.replace(
        "        for step, (x, y)",
        "        epoch_iterator = tqdm(test_loader)\n        for step, (x, y)",
    )
    assert [g.fix for g in findings(twice, "XLA106")] == []


def test_no_safe_wrap_while_nothing_places_the_model_on_a_device():
    # The wrap alone put the batches on XLA and left the model on the CPU: "Expected XLA
    # tensor" at the first step (tests/conversions/fixtures/parent_loop_sampler.py).
    code = """
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    def main():
        data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
    (f,) = findings(code, "XLA106")
    assert f.fix is not None and not f.fix.safe
    assert "XLA117" in f.fix.review_reason and "Expected XLA tensor" in f.fix.review_reason


def test_a_loop_counting_over_len_of_the_loader_wraps_nothing():
    # Held-out 31 (YOLOX's trainer): `for _ in range(len(loader))` with the batches from a
    # prefetcher's next(); the review fix once wrapped `len(loader)` (an int) in MpDeviceLoader.
    code = """
    import torch
    import torch.distributed as dist

    def train(model, loader, opt, prefetcher):
        dist.init_process_group("nccl")
        for _ in range(len(loader)):
            x, y = prefetcher.next()
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
    assert findings(code, "XLA106") == []


def test_a_monai_script_is_told_that_metatensor_batches_are_not_moved():
    # MONAI's BraTS DDP trainer (held-out 70): MpDeviceLoader moves only values whose type is
    # exactly torch.Tensor, so MetaTensor batches pass through on the CPU.
    code = DISTRIBUTED.replace(
        "import torch\n", "import torch\nfrom monai.data import DataLoader as _\n"
    )
    (f,) = findings(code, "XLA106")
    assert "MONAI's MetaTensor batches pass through on the CPU" in f.message
    (plain,) = findings(DISTRIBUTED, "XLA106")
    assert "MetaTensor" not in plain.message


@pytest.mark.xla
def test_the_device_loader_leaves_a_tensor_subclass_on_the_cpu(tmp_path):
    script = tmp_path / "subclass.py"
    script.write_text(
        "import torch, torch_xla\n"
        "import torch_xla.distributed.parallel_loader as pl\n"
        "class Meta(torch.Tensor):\n    pass\n"
        "batches = [{'plain': torch.ones(2), 'sub': torch.ones(2).as_subclass(Meta)}]\n"
        "for b in pl.MpDeviceLoader(batches, torch_xla.device()):\n"
        "    print(b['plain'].device.type, b['sub'].device.type)\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONWARNINGS": "ignore"}
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240
    )
    assert run.returncode == 0, run.stderr[-800:]
    assert run.stdout.split() == ["xla", "cpu"]


def test_a_loader_built_by_an_unseen_call_in_the_function_is_said_as_such():
    """simclr-pytorch (held-out 102): ``train_loader, val_loader = model.dataloaders(...)``
    in the same function; the reason names that call, not "a caller"."""
    code = """
    import torch
    import torch.distributed as dist

    def main_worker(model, args):
        dist.init_process_group("nccl")
        model.cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        train_loader, val_loader = model.dataloaders(iters=args.iters)
        for batch in train_loader:
            loss = model(batch.cuda()).sum()
            loss.backward()
            optimizer.step()
    """
    (f,) = findings(code, "XLA106")
    assert not f.fix.safe
    assert "the loader comes from `model.dataloaders(...)` (line 8)" in f.fix.review_reason


def test_a_library_loader_built_here_is_named_as_such():
    # graphlearn_torch's NeighborLoader (held-out 123) is built in the same function: it does
    # not "come from outside", and it is no plain DataLoader.
    code = """
    import torch
    import torch.distributed as dist
    import graphlearn_torch as glt


    def run(rank, dataset, model, optimizer, device):
        dist.init_process_group("xla")
        train_loader = glt.loader.NeighborLoader(data=dataset, batch_size=8, device=device)
        for batch in train_loader:
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()
    """
    (f,) = findings(code, "XLA106")
    assert f.message.startswith("distributed training loop iterates its loader as it is")
    assert not f.fix.safe
    assert "`glt.loader.NeighborLoader(...)` (line 8), another library's loader and places its" in (
        f.fix.review_reason
    )
    assert "outside this function" not in f.fix.review_reason


def test_a_loader_rebound_through_a_helper_is_not_the_dataloader_it_was():
    # ResNeSt (held-out 124): ``criterion, train_loader = get_criterion(cfg, train_loader,
    # gpu)`` returns a mixup generator that moves batches with .cuda(); the loop is a closure.
    # Wrapped as the DataLoader it was, the generator's error died in the loader thread: no
    # step ran and the script exited 0.
    code = """
    import torch
    import torch.distributed as dist
    from utils import get_criterion


    def main_worker(gpu, cfg, model, optimizer, dataset):
        dist.init_process_group("xla")
        train_loader = torch.utils.data.DataLoader(dataset, batch_size=8)
        criterion, train_loader = get_criterion(cfg, train_loader, gpu)

        def train(epoch):
            for data, target in train_loader:
                loss = criterion(model(data), target)
                loss.backward()
                optimizer.step()

        train(0)
    """
    (f,) = findings(code, "XLA106")
    assert not f.fix.safe
    assert "the loader comes from `get_criterion(...)` (line 9)" in f.fix.review_reason
    assert fixed(code, "XLA106") == src(code)
    plain = code.replace(
        "        criterion, train_loader = get_criterion(cfg, train_loader, gpu)\n", ""
    )
    plain = plain.replace("criterion(model(data), target)", "model(data).sum()")
    (g,) = findings(plain, "XLA106")
    assert g.fix.safe


def test_an_xla_loader_drawn_through_zip_and_cycle_is_not_wrapped_again():
    # onsets-and-frames' TPU trainer (held-out 127): the loop draws from an MpDeviceLoader the
    # same function builds, through ``zip(counter, cycle(mp_device_loader))``.
    code = """
    import torch
    import torch.distributed as dist
    import torch_xla.distributed.parallel_loader as pl
    from itertools import cycle
    from tqdm import tqdm


    def train(model, loader, optimizer, device):
        dist.init_process_group("xla", init_method="xla://")
        mp_device_loader = pl.MpDeviceLoader(loader, device)
        loop = tqdm(range(100))
        for i, batch in zip(loop, cycle(mp_device_loader)):
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()
    """
    assert findings(code, "XLA106") == []
    assert findings(code.replace("cycle(mp_device_loader)", "cycle(loader)"), "XLA106")
