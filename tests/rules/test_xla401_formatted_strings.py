"""XLA401: a device tensor formatted into a string outside any reporting call
(``bar.suffix = "...".format(top1.avg)``, held-out 18, bearpaw's progress bar): formatting
calls ``Tensor.__format__``, which reads the value on the host."""

from tests.helpers import findings

LOOP = """
import torch
import torch.nn as nn

dev = torch.device("cuda")


class Meter:
    def __init__(self):
        self.sum, self.n, self.avg = 0, 0, 0

    def update(self, v, k=1):
        self.sum += v * k
        self.n += k
        self.avg = self.sum / self.n


class Bar:
    suffix = ""


def train(loader, model, opt):
    losses = Meter()
    bar = Bar()
    for x, y in loader:
        x, y = x.to(dev), y.to(dev)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.update(loss.detach(), x.size(0))
        bar.suffix = "loss {:.4f}".format(losses.avg)
"""


def test_a_meter_average_formatted_into_a_progress_bar_is_a_read():
    (f,) = findings(LOOP, "XLA401")
    assert f.span.start.line + 1 == 31 and f.message.startswith("formatting a tensor reads")
    assert f.fix is None and f.manual


def test_percent_formatting_is_a_read_too():
    code = LOOP.replace('"loss {:.4f}".format(losses.avg)', '"loss %.4f" % losses.avg')
    (f,) = findings(code, "XLA401")
    assert f.span.start.line + 1 == 31


def test_a_meter_fed_python_numbers_formats_no_tensor():
    code = LOOP.replace("losses.update(loss.detach(),", "losses.update(loss.item(),")
    assert [f.span.start.line + 1 for f in findings(code, "XLA401")] == [30]  # the .item()


def test_formatting_inside_a_print_is_reported_once_as_the_print():
    code = LOOP.replace(
        'bar.suffix = "loss {:.4f}".format(losses.avg)', 'print("loss {:.4f}".format(losses.avg))'
    )
    (f,) = findings(code, "XLA401")
    assert "logging call" in f.message and f.fix is not None


def test_a_dict_of_tensors_handed_to_a_logger_is_a_read():
    # Held-out 24 (llama-recipes): wandb_run.log({"train/loss": loss.detach().float()}).
    code = LOOP.replace(
        'bar.suffix = "loss {:.4f}".format(losses.avg)',
        'run.log({"train/loss": loss.detach().float(), "step": 1})',
    )
    (f,) = findings(code, "XLA401")
    assert "logging call" in f.message and f.fix is not None
    # Python numbers only: nothing read.
    code = code.replace("loss.detach().float()", "loss.item()")
    assert [f.span.start.line + 1 for f in findings(code, "XLA401")] == [31]  # the .item()


def test_formatting_deep_inside_a_print_argument_is_reported_once_as_the_print():
    # ssd.pytorch (held-out 24): print("iter " + repr(i) + " || Loss: %.4f ||" % (loss.data[0])).
    code = LOOP.replace(
        'bar.suffix = "loss {:.4f}".format(losses.avg)',
        'print("iter " + repr(1) + " || Loss: %.4f ||" % (losses.avg), end=" ")',
    )
    (f,) = findings(code, "XLA401")
    assert "logging call" in f.message


METER_FIELDS = """
import torch
import torch_xla


class AverageMeter:
    def __init__(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train(model, loader, opt):
    device = torch_xla.device()
    losses = AverageMeter()
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        losses.update(loss, x.size(0))
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        if i % 10 == 0:
            line = "Loss {loss.val:.4f} ({loss.avg:.4f})".format(loss=losses)
            print(line)
"""


def test_attributes_a_format_string_reads_of_a_meter_fed_device_tensors():
    # held-out 142 (OpenPose's train_VGG19.py): "Loss {loss.val:.4f} ({loss.avg:.4f})".format(
    # loss=losses), the meter fed the device loss: formatting reads both tensors every print.
    (f,) = findings(METER_FIELDS, "XLA401")
    assert f.span.start.line + 1 == 30 and "formatting a tensor" in f.message
    fed_floats = METER_FIELDS.replace(
        "losses.update(loss, x.size(0))", "losses.update(loss.item(), x.size(0))"
    )
    assert [f.span.start.line + 1 for f in findings(fed_floats, "XLA401")] == [24]
    plain = METER_FIELDS.replace("{loss.val:.4f} ({loss.avg:.4f})", "{} {}").replace(
        "format(loss=losses)", "format(i, len(loader))"
    )
    assert [f for f in findings(plain, "XLA401") if "formatting" in f.message] == []
