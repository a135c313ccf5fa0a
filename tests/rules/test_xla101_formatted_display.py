"""A device formatted into a log line (held-out 157's TinyBERT scripts: ``logger.info("device:
{} n_gpu: {}".format(device, n_gpu))``) is only shown: the picker's fix stays safe. A
formatted text used for anything else (a path) is not followed, so the fix waits."""

from tests.helpers import findings, src

PICKER = src("""
import logging

import torch

logger = logging.getLogger(__name__)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
logger.info("device: {} n_gpu: {}".format(device, torch.cuda.device_count()))
model = torch.nn.Linear(4, 4).to(device)
""")


def _picker(code: str):
    (f,) = [f for f in findings(code, "XLA101") if f.span.start.line == 5]
    return f


def test_a_device_formatted_into_a_log_line_keeps_the_fix_safe():
    assert _picker(PICKER).fix.safe
    printed = PICKER.replace("logger.info(", "print(")
    assert _picker(printed).fix.safe


def test_a_formatted_device_used_otherwise_waits_for_review():
    code = PICKER.replace(
        'logger.info("device: {} n_gpu: {}".format(device, torch.cuda.device_count()))',
        'path = "ckpt_{}.pt".format(device)',
    )
    assert not _picker(code).fix.safe
