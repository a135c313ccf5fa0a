"""XLA101 on tests that ask whether the device is CUDA by its text or type (audioset_tagging_cnn,
held-out 103): once the picker gives the XLA device, ``'cuda' in str(device)`` is False, its
``else`` sets ``device = 'cpu'`` and the guarded ``model.to(device)`` never runs. Converted with
every fix (``--unsafe-fixes``) the script trained on the CPU with nothing left reported; the
tests are now named before and after the picker's fix alike."""

from tests.helpers import findings, fixed

SCRIPT = """
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true")
args = parser.parse_args()
device = torch.device("cuda") if args.cuda and torch.cuda.is_available() else torch.device("cpu")
if "cuda" in str(device):
    print("Using GPU.")
    device = "cuda"
else:
    device = "cpu"
model = torch.nn.Linear(4, 1)
if str(device).startswith("cuda"):
    model.to(device)
if "cuda" in str(device):
    torch.backends.cudnn.benchmark = True
"""


def _tests(code: str) -> list[str]:
    return [f.message for f in findings(code, "XLA101") if "asks whether" in f.message]


def test_device_text_tests_with_an_effect_are_named():
    fallback, move = _tests(SCRIPT)
    assert fallback.startswith('`"cuda" in str(device)` asks whether device is a CUDA device')
    assert 'the `else` sets `device = "cpu"` (line 12)' in fallback
    assert "(line 15: `model.to(device)`) never runs" in move


def test_still_named_once_the_picker_gives_the_xla_device():
    converted = fixed(SCRIPT, "XLA101", unsafe=True)
    assert "torch_xla.device()" in converted
    assert len(_tests(converted)) == 2


def test_quiet_without_an_effect_or_without_a_cuda_device():
    assert len(_tests(SCRIPT)) == 2  # the cudnn switch under the third test is no placement
    cpu_only = SCRIPT.replace(
        'torch.device("cuda") if args.cuda and torch.cuda.is_available() else ', ""
    ).replace('device = "cuda"', 'device = "cpu"')
    assert _tests(cpu_only) == []
