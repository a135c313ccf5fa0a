"""``if not torch.version.cuda: raise`` (held-out 145's InstructLLaMA): PyTorch's CPU wheel,
which XLA hosts often run, has no CUDA build, so the gate stops the converted script. Its
removal keeps every run the original completed, as for an availability gate."""

from tests.helpers import findings, fixed, src

GATE = src("""
import torch


def main():
    if not torch.version.cuda:
        raise RuntimeError("This script requires PyTorch with CUDA.")
    print("training")
""")


def test_the_cuda_build_gate_is_removed():
    (gate,) = [f for f in findings(GATE, "XLA403") if "torch.version.cuda" in f.message]
    assert gate.fix is not None and gate.fix.safe
    assert "is None" in gate.message and "CPU wheel" in gate.message
    out = fixed(GATE, "XLA403")
    assert "torch.version.cuda" not in out and 'print("training")' in out


def test_the_is_none_form_too():
    code = GATE.replace("if not torch.version.cuda:", "if torch.version.cuda is None:")
    (gate,) = [f for f in findings(code, "XLA403") if "torch.version.cuda" in f.message]
    assert gate.fix is not None and gate.fix.safe


def test_a_gate_with_more_conditions_is_left_to_a_person():
    code = GATE.replace(
        "if not torch.version.cuda:", "if not torch.version.cuda or torch.__version__ < '2':"
    )
    (gate,) = [f for f in findings(code, "XLA403") if "torch.version.cuda" in f.message]
    assert gate.fix is None


def test_a_version_read_that_stops_nothing_is_not_reported():
    code = GATE.replace(
        '        raise RuntimeError("This script requires PyTorch with CUDA.")',
        '        print("no CUDA build")',
    )
    assert not [f for f in findings(code, "XLA403") if "torch.version.cuda" in f.message]
