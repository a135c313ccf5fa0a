"""XLA101 on metrics libraries whose device defaults to CUDA (held-out 46's WGAN-GP: its
``get_inception_score_and_fid`` call names no device, and pytorch-gan-metrics runs Inception on
``cuda:0``): found where the call leaves the default, quiet where it chooses."""

from tests.helpers import findings

CODE = """
import torch
import torch_fidelity
import pytorch_gan_metrics as pgm
from cleanfid import fid
from pytorch_gan_metrics import get_inception_score_and_fid


def evaluate(imgs, stats, device, **options):
    IS, FID = get_inception_score_and_fid(imgs, stats, verbose=True)
    chosen = get_inception_score_and_fid(imgs, stats, device=device)
    folders = fid.compute_fid("real", "fake")
    folders_cpu = fid.compute_fid("real", "fake", device=torch.device("cpu"))
    stats_only = fid.frechet_distance(1, 2, 3, 4)
    fidelity = torch_fidelity.calculate_metrics(input1="real", input2="fake", fid=True)
    fidelity_cpu = torch_fidelity.calculate_metrics(input1="real", input2="fake", cuda=False)
    fidelity_cuda = torch_fidelity.calculate_metrics(input1="real", cuda=True)
    fidelity_test = torch_fidelity.calculate_metrics(input1="real", cuda=torch.cuda.is_available())
    forwarded = pgm.get_fid(imgs, stats, **options)
    plain = pgm.get_fid(imgs, stats)
    return IS, FID
"""


def _lines(found):
    lines = CODE.lstrip("\n").splitlines()
    return [lines[f.span.start.line].strip().split(" = ")[0] for f in found]


def test_calls_that_leave_the_cuda_default_are_found_without_a_fix():
    found = findings(CODE, "XLA101")
    assert _lines(found) == ["IS, FID", "folders", "fidelity", "fidelity_cuda", "plain"]
    assert all(f.fix is None and f.manual for f in found)
    assert "torch.device('cuda:0')" in found[0].message
    assert 'torch.device("cuda")' in found[1].message
    assert "`cuda=True`" in found[2].message and "cuda=False" in found[2].manual


def test_an_xla_script_that_chooses_the_device_gets_nothing():
    code = CODE.replace("(imgs, stats, verbose=True)", "(imgs, stats, device=device)")
    assert "IS, FID" not in _lines(findings(code, "XLA101"))


SUMMARIES = """
import torch
import torchsummary
from torchinfo import summary


def main(device, batch):
    model = torch.nn.Linear(3, 3)
    summary(model, (1, 3))
    model = model.to(device)
    summary(model, [(1, 3)], verbose=1)
    summary(model, (1, 3), device=device)
    summary(model, input_data=batch)
    torchsummary.summary(model, (3,))
    torchsummary.summary(model, (3,), device="cpu")
    cpu_model = torch.nn.Linear(3, 3)
    torchsummary.summary(cpu_model, (3,))
"""


def test_model_summaries_that_choose_a_device_themselves():
    # torchinfo 1.8's get_device: CUDA if available, else the CPU, unless the parameters are
    # on CUDA; so on an XLA host a summary after the move takes the model back to the CPU
    # (held-out 48's simple-diffusion crashed at step 0). torchsummary builds inputs on CUDA.
    found = findings(SUMMARIES, "XLA101")
    lines = SUMMARIES.lstrip("\n").splitlines()
    shown = [lines[f.span.start.line].strip() for f in found]
    assert shown == [
        "summary(model, [(1, 3)], verbose=1)",
        "torchsummary.summary(model, (3,))",
        'torchsummary.summary(model, (3,), device="cpu")',
    ]
    assert "back to the CPU" in found[0].message and found[0].fix is None
    assert "gets CPU inputs" in found[1].message
