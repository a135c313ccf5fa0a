"""A launch inside a wrapper: ``def run_distributed(fn, config): mp.spawn(fn, ...)`` called
with ``run_training`` (WaveGrad, held-out 97). The replicas run ``run_training``: its moves are
replica code, not the launcher parent's, and their fixes are not held back for review."""

import ast

from xla_lens.engine import analyze
from xla_lens.semantic.launch import launch_targets

from tests.helpers import findings, src

WRAPPED = """
import torch
import torch.multiprocessing as mp


def run_training(rank, config):
    model = torch.nn.Linear(4, 2).cuda()
    print(rank, model(torch.randn(2, 4).cuda()))


def run_distributed(fn, config, n):
    mp.spawn(fn, args=(config,), nprocs=n, join=True)


if __name__ == "__main__":
    n = torch.cuda.device_count()
    if n > 1:
        run_distributed(run_training, {}, n)
    else:
        run_training(0, {})
"""


def test_the_function_handed_to_a_launcher_wrapper_is_what_the_replicas_run():
    model = analyze(src(WRAPPED)).model
    assert [fn.name for fn in launch_targets(model, None)] == ["run_training"]
    by_keyword = WRAPPED.replace(
        "run_distributed(run_training, {}, n)", "run_distributed(config={}, n=n, fn=run_training)"
    )
    model = analyze(src(by_keyword)).model
    assert [fn.name for fn in launch_targets(model, None)] == ["run_training"]


def test_its_moves_are_replica_code_with_safe_fixes():
    moves = [f for f in findings(WRAPPED, "XLA101") if ".cuda()" in f.message]
    assert len(moves) == 2
    assert all(f.fix is not None and f.fix.safe for f in moves)
    assert not any("launcher's parent" in f.message for f in moves)


def test_a_wrapper_handed_something_else_has_no_target():
    lam = WRAPPED.replace(
        "run_distributed(run_training, {}, n)", "run_distributed(lambda r, c: None, {}, n)"
    )
    tree_model = analyze(src(lam)).model
    assert launch_targets(tree_model, None) == []
    assert isinstance(tree_model.tree, ast.Module)
