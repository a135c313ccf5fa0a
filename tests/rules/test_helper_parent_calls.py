"""A helper module's fix that calls the XLA runtime waits for review when another module's
launcher parent runs the helper (held-out 93: ``seed_everything(42)`` at module level before
``xmp.spawn``; ``torch_xla.manual_seed`` there made the launch fail, "Runtime is already
initialized")."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_callers, workspace_calls

from tests.helpers import src

UTILS = """
import random
import torch

def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
"""

WORKER = """
def main_worker(gpu, ngpus):
    model = torch.nn.Linear(4, 1).cuda(gpu)
    print(model(torch.randn(2, 4).cuda(gpu)))


if __name__ == "__main__":
    mp.spawn(main_worker, nprocs=2, args=(2,))
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    workspace_callers.clear_cache()
    workspace_calls.clear_cache()
    workspace.clear_cache()
    yield


def _seed_fix(tmp_path: Path, caller: str):
    (tmp_path / "utils.py").write_text(src(UTILS), encoding="utf-8")
    (tmp_path / "train.py").write_text(src(caller), encoding="utf-8")
    helper = tmp_path / "utils.py"
    result = analyze(helper.read_text(), str(helper))
    (f,) = [f for f in result.findings if "manual_seed" in f.message]
    assert f.fix is not None and "torch_xla.manual_seed(seed)" in f.fix.title
    return f


def test_a_seed_helper_the_launcher_parent_calls_is_for_review(tmp_path: Path):
    caller = (
        "import torch\nimport torch.multiprocessing as mp\nfrom utils import seed_everything\n"
        "seed_everything(0)\n" + src(WORKER)
    )
    f = _seed_fix(tmp_path, caller)
    assert not f.fix.safe
    assert "train.py line 4 calls seed_everything() in its launcher's parent process" in (
        f.fix.review_reason
    )
    assert "Runtime is already initialized" in f.message


def test_called_in_the_replica_only_the_seed_fix_stays_safe(tmp_path: Path):
    caller = (
        "import torch\nimport torch.multiprocessing as mp\nfrom utils import seed_everything\n"
        + src(WORKER).replace(
            "def main_worker(gpu, ngpus):\n",
            "def main_worker(gpu, ngpus):\n    seed_everything(0)\n",
        )
    )
    assert _seed_fix(tmp_path, caller).fix.safe


def test_a_caller_with_no_launcher_leaves_it_safe(tmp_path: Path):
    caller = "from utils import seed_everything\nseed_everything(0)\nprint('train here')\n"
    assert _seed_fix(tmp_path, caller).fix.safe
