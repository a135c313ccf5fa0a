"""XLA401 wraps a report in a step closure only where a sync is guaranteed after the safe
fixes: a step closure runs only at a sync, so in a loop nothing syncs the report is lost."""

from tests.helpers import findings, fixed, src

ACCELERATE_CYCLE = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader


def cycle(loader):
    while True:
        for data in loader:
            yield data


acc = Accelerator()
model, opt = torch.nn.Linear(4, 1), None
loader = cycle(DataLoader(torch.randn(64, 4), batch_size=8))
model, opt, loader = acc.prepare(model, opt, loader)
for i in range(3):
    loss = model(next(loader)).mean()
    acc.backward(loss)
    print(f"loss {loss.item()}")
    opt.step()
"""


def test_accelerate_with_a_generator_loader_gets_xla107s_sync_then_the_closure_is_safe():
    # prepare hands a generator back as it is (no MpDeviceLoader): XLA107 adds the sync.
    (sync,) = findings(ACCELERATE_CYCLE, "XLA107")
    assert sync.fix is not None and sync.fix.safe
    (f,) = findings(ACCELERATE_CYCLE, "XLA401")
    assert f.fix is not None and f.fix.safe
    out = fixed(ACCELERATE_CYCLE)
    assert "torch_xla.sync()" in out and "xm.add_step_closure(" in out


def test_accelerate_with_a_generator_loader_never_syncs_so_no_closure_is_offered():
    """A closure nothing would ever run is no fix, not even for review (held-out 109's TPU
    PPO control got one that ``--unsafe-fixes`` applied): the advice says why."""
    silenced = ACCELERATE_CYCLE.replace(
        "for i in range(3):\n", "for i in range(3):  # xla-lens: ignore[XLA107]\n"
    )
    (f,) = findings(silenced, "XLA401")
    assert f.fix is None
    assert f.manual is not None and "Nothing in this loop syncs" in f.manual
    assert fixed(silenced, unsafe=True) == src(silenced)
    # The finding stays; fix-all leaves the report where it is.
    assert fixed(silenced) == src(silenced)


def test_accelerate_with_a_prepared_dataloader_syncs_in_its_mp_device_loader():
    code = ACCELERATE_CYCLE.replace(
        "loader = cycle(DataLoader(torch.randn(64, 4), batch_size=8))",
        "loader = DataLoader(torch.randn(64, 4), batch_size=8)",
    ).replace(
        "for i in range(3):\n    loss = model(next(loader)).mean()",
        "for x in loader:\n    loss = model(x).mean()",
    )
    (f,) = findings(code, "XLA401")
    assert f.fix.safe
    inline = ACCELERATE_CYCLE.replace(
        "model, opt, loader = acc.prepare(model, opt, loader)",
        "model, opt, loader = acc.prepare(model, opt, DataLoader(torch.randn(64, 4)))",
    )
    (f,) = findings(inline, "XLA401")
    assert f.fix.safe


PLAIN = """
import torch
for x in loader:
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    print(f"loss {loss.item()}")
"""


def test_a_plain_loop_that_xla107_syncs_keeps_the_safe_closure():
    (f,) = findings(PLAIN, "XLA401")
    assert f.fix.safe
    out = fixed(PLAIN)
    assert out.index("xm.add_step_closure") < out.index("torch_xla.sync()")


def test_an_mp_device_loader_loop_keeps_the_safe_closure():
    code = PLAIN.replace(
        "import torch\nfor x in loader:",
        "import torch_xla.distributed.parallel_loader as pl\n"
        "for x in pl.MpDeviceLoader(loader, device):",
    )
    (f,) = findings(code, "XLA401")
    assert f.fix.safe
    assert not findings(code, "XLA107")


def test_no_safe_xla107_sync_means_no_closure():
    # The user silenced XLA107: no sync is added, so the closure would never run.
    silenced = PLAIN.replace("for x in loader:", "for x in loader:  # xla-lens: ignore[XLA107]")
    (f,) = findings(silenced, "XLA401")
    assert f.fix is None and "Nothing in this loop syncs" in f.manual
    # A loop body on the header line: XLA107 can only describe the sync, not add it.
    one_line = """
    import torch
    for x in loader: loss = model(x).sum(); loss.backward(); optimizer.step(); print(loss)
    """
    assert findings(one_line, "XLA107")[0].fix is None
    (f,) = findings(one_line, "XLA401")
    assert f.fix is None and "Nothing in this loop syncs" in f.manual


def test_a_sync_in_a_helper_the_loop_calls_keeps_the_safe_closure():
    code = """
    import torch_xla


    def end_step():
        torch_xla.sync()


    for x in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        print(loss)
        end_step()
    """
    assert not findings(code, "XLA107")
    (f,) = findings(code, "XLA401")
    assert f.fix.safe


# The training runs in the function the launcher will start (module-level code would be the
# launcher's parent, where the device fix, and so the loader wrap, waits for review).
DISTRIBUTED = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def train():
    dist.init_process_group("xla")
    device = torch.device("cuda")
    loader = DataLoader(ds, batch_size=8)
    for x in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        print(f"loss {loss.item()}")


if __name__ == "__main__":
    train()
"""


def test_a_loader_xla106_wraps_syncs_unless_the_wrap_is_silenced():
    (f,) = findings(DISTRIBUTED, "XLA401")
    assert f.fix.safe
    assert not findings(DISTRIBUTED, "XLA107")  # the MpDeviceLoader will sync
    silenced = DISTRIBUTED.replace(
        "for x in loader:", "for x in loader:  # xla-lens: ignore[XLA106]"
    )
    # Without the wrap, XLA107 syncs the loop, and the closure runs at that sync.
    (sync,) = findings(silenced, "XLA107")
    assert sync.fix.safe
    (f,) = findings(silenced, "XLA401")
    assert f.fix.safe
    neither = DISTRIBUTED.replace(
        "for x in loader:", "for x in loader:  # xla-lens: ignore[XLA106, XLA107]"
    )
    (f,) = findings(neither, "XLA401")
    assert f.fix is None and "Nothing in this loop syncs" in f.manual


def test_a_sync_offered_for_review_keeps_the_closure_for_review():
    """Chinese-CLIP (held-out 84): XLA107's sync waits for review (a ``continue`` after the
    step skips it); accepted together, the closure runs at that sync."""
    code = """
import torch
feats = []
for x in loader:
    if mode(x):
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    else:
        feats.append(model(x))
        if len(feats) < 4:
            continue
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item()}")
"""
    (sync,) = findings(code, "XLA107")
    assert sync.fix is not None and not sync.fix.safe
    (f,) = findings(code, "XLA401")
    assert f.fix is not None and not f.fix.safe
