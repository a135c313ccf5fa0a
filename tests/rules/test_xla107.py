from tests.helpers import findings, fixed, src

SINGLE = """
import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=8)
for x, y in loader:
    optimizer.zero_grad()
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
print("done")
"""


def test_loop_without_sync_gets_one_at_the_end_modern():
    (f,) = findings(SINGLE, "XLA107")
    assert (f.span.start.line, f.span.end.line) == (4, 4)  # the loop header only
    assert fixed(SINGLE, "XLA107") == src(SINGLE).replace(
        "from torch.utils.data import DataLoader\n",
        "from torch.utils.data import DataLoader\nimport torch_xla\n",
    ).replace("    optimizer.step()\n", "    optimizer.step()\n    torch_xla.sync()\n")


def test_legacy_target_appends_mark_step_with_the_scripts_alias():
    code = SINGLE.replace("import torch\n", "import torch\nimport torch_xla.core.xla_model as X\n")
    out = fixed(code, "XLA107", target="legacy")
    assert "    optimizer.step()\n    X.mark_step()\nprint" in out
    assert findings(out, "XLA107", target="legacy") == []


def test_while_loop_and_step_function():
    code = """
    import torch

    def train_step(batch):
        model(batch).sum().backward()
        optimizer.step()

    step = 0
    while step < 10:
        train_step(next(it))
        step += 1
    """
    out = fixed(code, "XLA107")
    assert "    step += 1\n    torch_xla.sync()\n" in out


def test_synced_loops_report_nothing():
    code = """
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.parallel_loader as pl
    from torch_xla import sync as do_sync

    def step_fn(batch):
        model(batch).sum().backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()

    for x in loader:
        step_fn(x)
    for x in loader:
        model(x).sum().backward()
        do_sync()
    for x in loader:
        model(x).sum().backward()
        xm.optimizer_step(optimizer, barrier=True)
    for x in pl.MpDeviceLoader(loader, device):
        model(x).sum().backward()
    para = pl.ParallelLoader(loader, [device])
    for i, x in enumerate(para.per_device_loader(device)):
        model(x).sum().backward()
    for x in loader:
        with torch_xla.step():
            model(x).sum().backward()
    """
    assert findings(code, "XLA107") == []


def test_optimizer_step_without_barrier_does_not_count_as_a_sync():
    code = """
    import torch_xla.core.xla_model as xm
    for x in loader:
        model(x).sum().backward()
        xm.optimizer_step(optimizer)
    """
    assert len(findings(code, "XLA107")) == 1


def test_distributed_dataloader_loop_is_left_to_xla106():
    code = """
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    def train():
        dist.init_process_group("xla")
        loader = DataLoader(ds)
        for x in loader:
            model(x).sum().backward()
        for i in range(10):
            model(i).sum().backward()
    """
    # In a function: module-level code would be the launcher's parent, where the engine holds
    # the wrap back (then XLA107 syncs that loop too: test_fix_dependencies).
    (f,) = findings(code, "XLA107")
    assert f.span.start.line == 7  # only the range() loop: XLA106 wraps the other
    assert {g.code for g in findings(code)} >= {"XLA106", "XLA107"}


def test_one_line_loop_body_gets_manual_advice_not_a_half_applied_fix():
    code = """
    import torch
    for x in loader: model(x).sum().backward(); optimizer.step()
    """
    (f,) = findings(code, "XLA107")
    assert f.fix is None and "torch_xla.sync()" in f.manual
    assert fixed(code, "XLA107") == src(code)


def test_the_sync_goes_before_the_exit_checks_that_end_the_loop_body():
    code = """
    import torch
    step = 0
    while True:
        x, y = loader.next()
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        step += 1
        if step >= max_steps:
            break
        if done:
            sys.exit(0)
    """
    out = fixed(code, "XLA107")
    # On the step that leaves the loop a sync after `break` would never run.
    assert "    step += 1\n    torch_xla.sync()\n    if step >= max_steps:\n        break\n" in out


PASSED_IN = """
{head}

def train_loop(model, opt, loader):
    for step, (x, y) in enumerate(loader):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        {log}
"""


def test_loader_handed_in_from_another_module_of_an_xla_script_needs_no_sync():
    # pytorch/xla examples: the base class in a sibling module passes a pl.MpDeviceLoader;
    # the file uses torch_xla API no xla-lens fix writes (examples/train_resnet_amp.py has
    # xm.RateTracker).
    code = PASSED_IN.format(
        head="import torch_xla\nimport torch_xla.core.xla_model as xm\ntracker = xm.RateTracker()",
        log="xm.add_step_closure(print, args=(step, loss))",
    )
    assert findings(code, "XLA107") == []
    # Also through `loader = itertools.islice(loader, n)`, with metrics imported.
    sliced = """
    import itertools
    import torch_xla
    import torch_xla.debug.metrics as met

    def train_loop(model, opt, loader, steps):
        loader = itertools.islice(loader, steps)
        for x, y in loader:
            with torch.autocast("xla", dtype=torch.bfloat16):
                loss = model(x.to(torch_xla.device())).sum()
            loss.backward()
            opt.step()
    """
    assert findings(sliced, "XLA107") == []


def test_what_other_fixes_write_is_no_evidence_that_a_handed_in_loader_syncs():
    # torch_xla.device() (XLA101), a step closure (XLA401), xm.optimizer_step (XLA105): a CUDA
    # script with those fixes applied looks exactly like this, and its loop still needs the
    # sync the CUDA script was given (the finding must not depend on which fix came first).
    for head, log in [
        ("import torch_xla", "x.to(torch_xla.device())"),
        ("import torch_xla.core.xla_model as xm", "xm.add_step_closure(print, args=(step,))"),
        ("import torch_xla.core.xla_model as xm", "xm.optimizer_step(opt)"),
    ]:
        code = PASSED_IN.format(head=head, log=log)
        assert len(findings(code, "XLA107")) == 1, log


def test_loader_parameter_in_a_cuda_script_or_fed_a_dataloader_here_still_needs_a_sync():
    cuda = PASSED_IN.format(head="import torch", log="print(step)")
    assert len(findings(cuda, "XLA107")) == 1
    # An XLA script whose own caller passes a plain DataLoader: the loop is not fed by an
    # XLA loader, whatever else the file does.
    fed_here = (
        PASSED_IN.format(
            head="import torch_xla\nimport torch_xla.core.xla_model as xm\n"
            "from torch.utils.data import DataLoader",
            log="xm.add_step_closure(print, args=(step, loss))",
        )
        + "\ntrain_loop(model, opt, DataLoader(ds))\n"
    )
    assert len(findings(fed_here, "XLA107")) == 1
    # A loader the loop rebinds to something else is no longer the parameter.
    rebound = """
    import torch_xla

    def train_loop(model, opt, loader):
        loader = make_loader()
        for x in loader:
            model(x.to(torch_xla.device())).sum().backward()
            opt.step()
    """
    assert len(findings(rebound, "XLA107")) == 1


def test_a_loss_scaler_passed_in_makes_the_loop_a_training_loop():
    # MAE/DeiT/timm: loss_scaler(loss, optimizer, parameters=...) runs backward and step out
    # of sight (a NativeScaler passed in); the loop still needs its sync (fresh held-out probe).
    code = """
    import torch
    def train_one_epoch(model, data_loader, optimizer, device, loss_scaler):
        for samples, _ in data_loader:
            loss = model(samples.to(device)).mean()
            optimizer.zero_grad()
            loss_scaler(loss, optimizer, parameters=model.parameters())
    """
    (f,) = findings(code, "XLA107")
    assert f.fix is not None and f.fix.safe
    # A plain callback that takes no optimizer does not make a loop a training loop.
    plain = code.replace(
        "loss_scaler(loss, optimizer, parameters=model.parameters())", "log(loss, step)"
    )
    assert findings(plain.replace("loss_scaler)", "log, step)"), "XLA107") == []


def test_a_loss_scaler_built_in_the_script_makes_the_loop_a_training_loop():
    # Uformer's train_denoise.py (held-out 72): `loss_scaler = NativeScaler()` at module level
    # and `loss_scaler(loss, optimizer, parameters=...)` in place of backward and step.
    code = """
    import torch
    from timm.utils import NativeScaler
    loss_scaler = NativeScaler()
    for epoch in range(3):
        for i, data in enumerate(train_loader):
            optimizer.zero_grad()
            loss = criterion(model(data[1].cuda()), data[0].cuda())
            loss_scaler(loss, optimizer, parameters=model.parameters())
            epoch_loss += loss.item()
    """
    (f,) = findings(code, "XLA107")
    assert f.span.start.line == 4 and f.fix is not None and f.fix.safe
    # Another callable bound at module level is no step.
    other = code.replace("loss_scaler = NativeScaler()", "loss_scaler = make_logger()")
    assert findings(other, "XLA107") == []


def test_xla_optimizer_step_alone_does_not_sync_so_the_loop_is_reported():
    # xm.optimizer_step runs with barrier=False: a loop with it and nothing else that syncs
    # (no loader of XLA's, no sync, no hand-written XLA API) never marks the step, whether a
    # person wrote it or XLA105's fix did.
    code = """
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm

    device = torch_xla.device()
    for step in range(10):
        opt.zero_grad()
        model(torch.randn(2, 4, device=device)).sum().backward()
        xm.optimizer_step(opt)
    """
    (f,) = findings(code, "XLA107")
    assert "torch_xla.sync()" in fixed(code, "XLA107")
    # With barrier=True the step syncs itself.
    barrier = code.replace("xm.optimizer_step(opt)", "xm.optimizer_step(opt, barrier=True)")
    assert findings(barrier, "XLA107") == []
    # In a script written for XLA by hand (metrics, ParallelLoader, torch_xla.compile...)
    # a loop that draws no data is taken to be synced by that machinery.
    by_hand = code.replace(
        "import torch_xla.core.xla_model as xm",
        "import torch_xla.core.xla_model as xm\n    import torch_xla.debug.metrics as met",
    )
    assert findings(by_hand, "XLA107") == []


def test_sub_step_loop_inside_a_training_loop_leaves_the_sync_to_that_loop():
    # Several discriminator updates per batch: one sync per batch, at the end of the outer
    # loop. Reporting the inner loop too would make its finding depend on whether the outer
    # loop's fix came first.
    code = """
    import torch

    for x in loader:
        for _ in range(n_critic):
            d_opt.zero_grad()
            D(x).sum().backward()
            d_opt.step()
        g_opt.zero_grad()
        G(x).sum().backward()
        g_opt.step()
    """
    (f,) = findings(code, "XLA107")
    assert (f.span.start.line, f.span.end.line) == (2, 2)  # the outer loop
    out = fixed(code, "XLA107")
    assert out.count("torch_xla.sync()") == 1
    assert out.rstrip().endswith("g_opt.step()\n    torch_xla.sync()")
    assert findings(out, "XLA107") == []
    # Inside a loop over an XLA loader the loader syncs.
    xla = code.replace("for x in loader:", "for x in pl.MpDeviceLoader(loader, dev):")
    xla = "import torch_xla.distributed.parallel_loader as pl\n" + src(xla)
    assert findings(xla, "XLA107") == []


def test_a_step_function_defined_in_the_loop_and_handed_to_a_timer():
    # held-out 30 (I-JEPA's src/train.py): `def train_step(): ... loss.backward() ...` inside
    # the loop, run through `gpu_timer(train_step)`: the loop is the training loop.
    code = """
    import torch
    def main(model, loader, opt, timer):
        for itr, (x, y) in enumerate(loader):
            x, y = x.cuda(), y.cuda()
            def train_step():
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                return float(loss)
            loss, etime = timer(train_step)
    """
    (f,) = findings(code, "XLA107")
    assert f.span.start.line == 2
    assert "        loss, etime = timer(train_step)\n        torch_xla.sync()\n" in fixed(
        code, "XLA107"
    )
    unused = code.replace("loss, etime = timer(train_step)", "pass")
    assert findings(unused, "XLA107") == []


def test_an_accumulation_loop_inside_a_step_the_outer_loop_syncs_needs_no_sync():
    # Held-out 75's TPU control: micro-batches accumulate inside `for step ...`, whose own
    # body ends with xm.mark_step(); a sync per micro-batch would only cut the step apart.
    code = """
    import torch
    import torch_xla.core.xla_model as xm

    def train(model, opts, data, steps, accum, device):
        for step in range(steps):
            for micro in range(accum):
                x, y = data.get_batch(step * accum + micro)
                loss = model(x.to(device), y.to(device))
                (loss / accum).backward()
            for o in opts:
                o.step()
            xm.mark_step()
    """
    assert findings(code, "XLA107") == []
    unsynced = code.replace("            xm.mark_step()\n", "")
    assert len(findings(unsynced, "XLA107")) == 1
