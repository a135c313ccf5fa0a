"""XLA105: a training function of a workspace module whose callers (other modules of the
project that import it) wrap the model in DistributedDataParallel keeps its plain step: over
the xla backend DDP all-reduces the gradients in backward, and xm.optimizer_step would
all-reduce them a second time. Callers that disagree make the fix wait for review."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_callers, workspace_calls

from tests.helpers import src

CODE = "XLA105"

TRAIN_LIB = """
import torch


def unwrap(model):
    return model.module if hasattr(model, "module") else model


def train_one_epoch(model, loader, loss_fn, optimizer, args):
    device = torch.device(args.device)
    model.train()
    for images, labels in loader:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
"""

DDP_MAIN = """
import torch
from torch import optim
from engine import train_one_epoch


def main(args, model, loader, loss_fn):
    device = torch.device(args.device)
    model = model.to(device)
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device])
    optimizer = optim.AdamW(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, loss_fn, optimizer, args)
"""

PLAIN_MAIN = """
import torch
from torch import optim
import engine


def run(args, model, loader, loss_fn):
    model = model.to(torch.device(args.device))
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    engine.train_one_epoch(model, loader, loss_fn, optimizer, args)
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


def test_a_step_whose_only_caller_wraps_the_model_in_ddp_stays_plain(tmp_path: Path):
    lib = _write(tmp_path / "engine.py", TRAIN_LIB)
    _write(tmp_path / "main.py", DDP_MAIN)
    assert _found(lib) == []


def test_callers_without_ddp_keep_the_safe_fix(tmp_path: Path):
    lib = _write(tmp_path / "engine.py", TRAIN_LIB)
    _write(tmp_path / "run.py", PLAIN_MAIN)
    (f,) = _found(lib)
    assert f.fix.safe
    # No caller found anywhere: the optimizer parameter could be anyone's (accelerate's,
    # one over a DDP model), so the fix waits for review (test_xla105_unknown_callers.py).
    (tmp_path / "run.py").unlink()
    workspace_callers.clear_cache()
    (f,) = _found(lib)
    assert not f.fix.safe and "comes from the caller" in f.fix.review_reason


def test_callers_that_disagree_make_the_fix_wait_for_review(tmp_path: Path):
    lib = _write(tmp_path / "engine.py", TRAIN_LIB)
    _write(tmp_path / "main.py", DDP_MAIN)
    _write(tmp_path / "run.py", PLAIN_MAIN)
    (f,) = _found(lib)
    assert not f.fix.safe
    assert "main.py" in f.fix.review_reason and "DistributedDataParallel" in f.fix.review_reason
    assert "second time" in f.fix.review_reason


def test_a_caller_in_the_file_itself_without_ddp_makes_the_fix_wait_for_review(tmp_path: Path):
    lib = _write(
        tmp_path / "engine.py",
        TRAIN_LIB
        + """
if __name__ == "__main__":
    train_one_epoch(build(), make_loader(), torch.nn.CrossEntropyLoss(), make_opt(), parse())
""",
    )
    _write(tmp_path / "main.py", DDP_MAIN)
    (f,) = _found(lib)
    assert not f.fix.safe and "main.py" in f.fix.review_reason


def test_a_caller_in_a_package_above_is_found(tmp_path: Path):
    _write(tmp_path / "pyproject.toml", "")
    _write(tmp_path / "mypkg" / "__init__.py", "")
    lib = _write(tmp_path / "mypkg" / "engine.py", TRAIN_LIB)
    _write(
        tmp_path / "mypkg" / "main.py",
        DDP_MAIN.replace("from engine import", "from mypkg.engine import"),
    )
    assert _found(lib) == []


def test_a_fifo_or_a_blocking_link_beside_the_file_is_skipped_not_waited_on(tmp_path: Path):
    import os

    lib = _write(tmp_path / "engine.py", TRAIN_LIB)
    os.mkfifo(tmp_path / "main.py")
    if Path("/proc/kmsg").exists():
        (tmp_path / "kmsg.py").symlink_to("/proc/kmsg")
    (f,) = _found(lib)  # as with no caller at all
    assert not f.fix.safe and "comes from the caller" in f.fix.review_reason


WRAP_HELPERS = """
import torch.distributed as dist
import torch_xla
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    dist.init_process_group("xla", init_method="xla://")
    return torch_xla.device()


def wrap(model, opt):
    model = DDP(model, gradient_as_bucket_view=True)
    return model, opt
"""

WRAPPED_MAIN = """
import torch
import torch_xla
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from dist_helpers import setup, wrap


def main():
    device = setup()
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
    model = torch.nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = wrap(model, opt)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch_xla.sync()


if __name__ == "__main__":
    main()
"""


def test_a_model_wrapped_in_ddp_by_a_sibling_helper_keeps_its_plain_step(tmp_path: Path):
    # held-out 9 r1 (LoRA's gpu.distributed_opt): DDP already averages the gradients, so
    # xm.optimizer_step would all-reduce them a second time every step.
    _write(tmp_path / "dist_helpers.py", WRAP_HELPERS)
    main = _write(tmp_path / "train.py", WRAPPED_MAIN)
    assert _found(main) == []
    _write(
        tmp_path / "dist_helpers.py",
        WRAP_HELPERS.replace("DDP(model, gradient_as_bucket_view=True)", "model"),
    )
    assert len(_found(main)) == 1
