"""XLA401 stays quiet where nothing reads the device: floats handed over by a running-average
object fed Python numbers, a name whose value in this step is a float (flow-sensitive), and a
tensor the script has just materialized with its own sync."""

from tests.helpers import findings, src

METER_LOOP = """
import torch


class RunningMean:
    def __init__(self):
        self.last = self.mean = self.total = 0.0
        self.n = 0

    def update(self, value, n=1):
        self.last = value
        self.total += value * n
        self.n += n
        self.mean = self.total / self.n


def train_epoch(net, loader, opt, device, multi):
    meter = RunningMean()
    for i, (xb, yb) in enumerate(loader):
        loss = net(xb.to(device), yb.to(device))
        loss.backward()
        opt.step()
        meter.update({fed}, xb.size(0))
        if i % 10 == 0:
            mean_now, last_now = meter.mean, meter.last
            if multi:
                mean_now = sync_mean(loss.new([mean_now])).item()
            log.info(f"step {{i}} loss {{last_now:.3f}} (avg {{mean_now:.3f}})")
    mean_now = meter.mean
    if multi:
        mean_now = torch.tensor([mean_now], device=device)
        mean_now = sync_mean(mean_now).item()
    return mean_now
"""


def _reads(code: str) -> list[tuple[str, str]]:
    text = src(code).splitlines()
    return [
        (text[f.span.start.line].strip(), f.message.split(" reads")[0])
        for f in findings(code, "XLA401")
    ]


def test_floats_from_a_meter_fed_item_values_are_not_device_reads():
    code = METER_LOOP.format(fed="loss.item()")
    reads = _reads(code)
    assert ("meter.update(loss.item(), xb.size(0))", ".item()") in reads
    assert not [r for r in reads if r[1] == "formatting a tensor"], reads


def test_a_meter_fed_the_loss_tensor_holds_a_tensor_and_stays_reported():
    code = METER_LOOP.format(fed="loss.detach()")
    reads = _reads(code)
    assert (
        'log.info(f"step {i} loss {last_now:.3f} (avg {mean_now:.3f})")',
        "formatting a tensor",
    ) in reads


SYNCED_STEP = """
import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl


def run(net, loader, opt, device, every):
    feed = pl.MpDeviceLoader(loader, device)
    for step, (xb, yb) in enumerate(feed):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(xb), yb)
        loss.backward()
        opt.step()
        torch_xla.sync()
{after}
"""


def test_printing_the_loss_right_after_the_scripts_own_sync_is_not_a_new_graph():
    after = '        if step % every == 0:\n            print(f"step {step} loss {loss}")\n'
    assert findings(SYNCED_STEP.format(after=after), "XLA401") == []
    item = '        if step % every == 0:\n            print("loss", loss.item(), float(loss))\n'
    assert findings(SYNCED_STEP.format(after=item), "XLA401") == []


def test_a_tensor_op_after_the_sync_is_a_new_graph_and_still_reported():
    after = '        if step % every == 0:\n            print(f"loss {loss.mean()}")\n'
    assert [
        f.message.split(" reads")[0] for f in findings(SYNCED_STEP.format(after=after), "XLA401")
    ] == ["formatting a tensor"]


def test_a_value_rebound_after_the_sync_is_pending_again():
    after = (
        "        loss = loss * 2\n"
        '        if step % every == 0:\n            print(f"loss {loss}")\n'
    )
    assert len(findings(SYNCED_STEP.format(after=after), "XLA401")) == 1


def test_a_read_before_the_sync_is_still_reported():
    code = SYNCED_STEP.format(after="").replace(
        "        torch_xla.sync()\n", '        print(f"loss {loss}")\n        torch_xla.sync()\n'
    )
    assert len(findings(code, "XLA401")) == 1


def test_a_conditional_sync_does_not_cover_the_read():
    code = SYNCED_STEP.format(after='        print(f"loss {loss}")\n').replace(
        "        torch_xla.sync()\n", "        if step % 2:\n            torch_xla.sync()\n"
    )
    assert len(findings(code, "XLA401")) == 1


def test_an_in_place_op_or_an_inner_loop_rebinding_after_the_sync_is_pending_again():
    in_place = '        loss.mul_(2)\n        print(f"loss {loss}")\n'
    assert len(findings(SYNCED_STEP.format(after=in_place), "XLA401")) == 1
    inner = (
        "        for k in range(2):\n"
        '            print(f"loss {loss}")\n'
        "            loss = loss + 1\n"
    )
    assert len(findings(SYNCED_STEP.format(after=inner), "XLA401")) == 1


def test_a_step_function_that_syncs_before_its_report_reads_computed_values():
    code = """
    import torch_xla.core.xla_model as xm

    def train_step(net, opt, xb, yb):
        loss = net(xb, yb)
        loss.backward()
        xm.optimizer_step(opt, barrier=True)
        print("loss", loss)
        return loss

    for xb, yb in loader:
        train_step(net, opt, xb, yb)
    """
    assert findings(code, "XLA401") == []
    without_barrier = code.replace(", barrier=True", "")
    assert len(findings(without_barrier, "XLA401")) == 1


def test_a_meter_named_like_a_loss_is_an_object_not_a_tensor():
    # held-out 9 r3 (LoRA's avg_lm_loss = AverageMeter() fed loss.item()): formatting its
    # Python-float .val is no read; only the .item() is.
    code = """
    import torch

    class Meter:
        def __init__(self):
            self.val = 0.0

        def update(self, val):
            self.val = val

    def train(model, loader, opt, device):
        avg_lm_loss = Meter()
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            avg_lm_loss.update(loss.item())
            print(f"step {step} loss {avg_lm_loss.val:5.2f}")
    """
    found = findings(code, "XLA401")
    assert [src(code).splitlines()[f.span.start.line].strip() for f in found] == [
        "avg_lm_loss.update(loss.item())"
    ]


def test_a_logarithm_is_no_logging_call():
    # held-out 20 (leftthomas/SimCLR): `torch.log(...)` in the loss was reported as "passing a
    # tensor to a logging call"; a real logger's `.log(...)` still is.
    code = """
    import logging
    import torch

    logger = logging.getLogger(__name__)

    def train(net, loader, opt):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            p = torch.softmax(net(x), -1)
            loss = (-torch.log(p.gather(1, y[:, None]))).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            logger.log(logging.INFO, loss)
    """
    found = [f for f in findings(code, "XLA401") if "logging call" in f.message]
    assert [f.span.start.line for f in found] == [13]


def test_a_periodic_report_in_a_script_written_for_xla_is_left_to_its_author():
    # Shopee's TPU trainer (held-out 161's control): `loss.item()` every 20 steps under a
    # ParallelLoader a person chose; one extra run per interval, the author's call.
    code = """
    import torch
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.parallel_loader as pl

    def train(model, loader, optimizer, device):
        tracker = xm.RateTracker()
        for x, (data, label) in enumerate(pl.ParallelLoader(loader, [device]).per_device_loader(device)):
            loss = model(data, label)
            loss.backward()
            xm.optimizer_step(optimizer)
            tracker.add(8)
            if x % 20 == 0:
                print(x, loss.item(), tracker.rate())
    """
    assert findings(code, "XLA401") == []
    every_step = code.replace("            if x % 20 == 0:\n    ", "")
    assert [f.code for f in findings(every_step, "XLA401")] == ["XLA401"]


def test_a_float_scaled_by_an_int_attribute_is_formatted_without_a_read():
    # KIE's LayoutLMv3 trainer (held-out 163): `total_loss += loss.item() * self.accum`, with
    # `self.accum` set from an `int` parameter, is a Python float; its f-string reads nothing.
    code = """
    import torch

    class Trainer:
        def __init__(self, model, optimizer, accum: int = 1):
            self.model, self.optimizer = model, optimizer
            self.accum = accum

        def train(self, loader, bar):
            total_loss = 0
            for step, x in enumerate(loader):
                loss = self.model(x.cuda()).sum() / self.accum
                loss.backward()
                self.optimizer.step()
                total_loss += loss.item() * self.accum
                bar.set_postfix({"loss": f"{total_loss / (step + 1):.4f}"})
    """
    lines = [f.span.start.line + 1 for f in findings(code, "XLA401")]
    assert lines == [14]  # the .item() itself, not the formatted float
    tensor_attr = code.replace("accum: int = 1", "accum")
    assert 15 in [f.span.start.line + 1 for f in findings(tensor_attr, "XLA401")]
