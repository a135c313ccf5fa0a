"""XLA105: a training function of a library module (no entry point of its own) whose optimizer
arrives as a parameter, with no caller visible in the file or its workspace folders, cannot
know whether that optimizer is accelerate's prepared one (whose step already all-reduces on
XLA) or belongs to a DDP-wrapped model: xm.optimizer_step would all-reduce a second time, so
the fix waits for review. Once a caller is found that reduces nothing, the fix is safe."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_callers, workspace_calls

from tests.helpers import src

CODE = "XLA105"

LOOP_LIB = """
import torch


def run_epoch(helper, net, opt, batches):
    for inp in batches:
        inp = inp.to(helper.device)
        with helper.accumulate([net]):
            loss = net(inp).square().mean()
            helper.backward(loss)
            opt.step()
            opt.zero_grad(set_to_none=True)
"""

# A launcher that prepares the optimizer with accelerate (in scripts/ beside the package, as in
# 1d-tokenizer's layout, or somewhere the search does not reach).
ACCEL_LAUNCHER = """
import torch
from accelerate import Accelerator
from tools.loop import run_epoch


def main():
    acc = Accelerator()
    net = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    net, opt = acc.prepare(net, opt)
    run_epoch(acc, net, opt, [torch.randn(2, 3)])
"""

PLAIN_LAUNCHER = """
import torch
from tools.loop import run_epoch


def main(helper):
    net = torch.nn.Linear(3, 1)
    run_epoch(helper, net, torch.optim.SGD(net.parameters(), lr=0.01), [torch.randn(2, 3)])
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_callers.clear_cache()
    yield


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


def _found(script: Path):
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [f for f in result.findings if f.code == CODE]


def test_a_parameter_optimizer_with_no_caller_in_reach_waits_for_review(tmp_path: Path):
    _write(tmp_path / "tools" / "__init__.py", "")
    lib = _write(tmp_path / "tools" / "loop.py", LOOP_LIB)
    # Two folders down from the package's parent: out of the search's reach.
    _write(tmp_path / "jobs" / "cifar" / "train.py", ACCEL_LAUNCHER)
    (f,) = _found(lib)
    assert not f.fix.safe
    reason = f.fix.review_reason
    assert "comes from the caller" in reason and "accelerate" in reason and "DDP" in reason
    assert "`opt`" in reason and "run_epoch()" in reason


def test_the_accelerate_caller_in_a_folder_beside_the_package_is_found(tmp_path: Path):
    _write(tmp_path / "tools" / "__init__.py", "")
    lib = _write(tmp_path / "tools" / "loop.py", LOOP_LIB)
    _write(tmp_path / "scripts" / "train.py", ACCEL_LAUNCHER)
    assert _found(lib) == []


def test_a_plain_caller_in_a_folder_beside_the_package_keeps_the_safe_fix(tmp_path: Path):
    _write(tmp_path / "tools" / "__init__.py", "")
    lib = _write(tmp_path / "tools" / "loop.py", LOOP_LIB)
    _write(tmp_path / "scripts" / "train.py", PLAIN_LAUNCHER)
    (f,) = _found(lib)
    assert f.fix.safe


def test_the_same_with_the_accelerate_caller_beside_it_is_not_reported(tmp_path: Path):
    lib = _write(tmp_path / "loop.py", LOOP_LIB)
    _write(tmp_path / "train.py", ACCEL_LAUNCHER.replace("from tools.loop", "from loop"))
    assert _found(lib) == []


def test_a_caller_found_that_reduces_nothing_keeps_the_safe_fix(tmp_path: Path):
    lib = _write(tmp_path / "loop.py", LOOP_LIB)
    _write(tmp_path / "train.py", PLAIN_LAUNCHER.replace("from tools.loop", "from loop"))
    (f,) = _found(lib)
    assert f.fix.safe


def test_an_optimizer_passed_by_the_file_itself_keeps_the_safe_fix(tmp_path: Path):
    lib = _write(
        tmp_path / "loop.py",
        LOOP_LIB
        + """

if __name__ == "__main__":
    net = torch.nn.Linear(3, 1)
    run_epoch(None, net, torch.optim.SGD(net.parameters(), lr=0.01), [torch.randn(2, 3)])
""",
    )
    (f,) = _found(lib)
    assert f.fix.safe
