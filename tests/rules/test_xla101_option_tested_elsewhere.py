"""XLA101's ``--device`` default rewrite when another module of the project tests the parsed
value against a CUDA string (pmf_cvpr22, held-out 86: ``utils/args.py`` builds the parser,
``utils/deit_util.py`` runs ``if args.device != 'cuda': args.distributed = False; return``).
With the "xla" default every torchrun rank silently trained alone; the fix now waits for
review and names the test. A comparison with another string ("cpu") keeps its result."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import src

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")

ARGS = """
import argparse


def get_args_parser():
    parser = argparse.ArgumentParser("few-shot", add_help=False)
    parser.add_argument("--epochs", default=100, type=int)
    parser.add_argument("--device", default="cuda", help="cuda:gpu_id for single GPU training")
    return parser
"""

DIST = """
import os
import torch


def init_distributed_mode(args):
    if TEST:
        args.distributed = False
        return
    args.rank = int(os.environ["RANK"])
    args.distributed = True
    torch.distributed.init_process_group(backend="nccl")
"""


def _device_default(tmp_path: Path, test: str | None):
    utils = tmp_path / "utils"
    utils.mkdir()
    (utils / "__init__.py").write_text("", encoding="utf-8")
    args = utils / "args.py"
    args.write_text(src(ARGS), encoding="utf-8")
    if test is not None:
        (utils / "deit_util.py").write_text(src(DIST).replace("TEST", test), encoding="utf-8")
    result = analyze(args.read_text(), str(args))
    (f,) = [f for f in result.findings if f.code == "XLA101"]
    return f


def test_a_cuda_string_test_in_another_module_makes_the_default_wait_for_review(tmp_path):
    f = _device_default(tmp_path, "args.device != 'cuda'")
    assert f.fix is not None and not f.fix.safe
    assert "deit_util.py line 6 `if args.device != 'cuda':`" in f.fix.review_reason


@pytest.mark.parametrize("test", ["'cuda' not in args.device", 'args.device.startswith("cuda")'])
def test_other_spellings_of_the_test_count(tmp_path, test):
    assert not _device_default(tmp_path, test).fix.safe


@pytest.mark.parametrize("test", [None, "args.device == 'cpu'", "x.device != y.device"])
def test_tests_that_keep_their_result_leave_the_fix_safe(tmp_path, test):
    assert _device_default(tmp_path, test).fix.safe
