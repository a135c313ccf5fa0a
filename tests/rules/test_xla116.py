from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

TRAIN = """
import argparse
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=1)
args = p.parse_args()
torch.manual_seed(args.seed)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    opt.zero_grad()
    model(torch.randn(2, 4, device=device)).sum().backward()
    opt.step()
"""


def test_a_cuda_script_seeded_with_torch_manual_seed_also_seeds_the_xla_device():
    (f,) = findings(TRAIN, "XLA116")
    assert f.fix.safe and f.span.start.line == 7
    out = fixed(TRAIN, "XLA116")
    assert "torch.manual_seed(args.seed)\ntorch_xla.manual_seed(torch.initial_seed())\n" in out
    assert "import torch_xla\n" in out


def test_legacy_target_seeds_with_set_rng_state_and_a_literal_seed_is_kept():
    code = TRAIN.replace("torch.manual_seed(args.seed)", "torch.manual_seed(42)")
    out = fixed(code, "XLA116", target="legacy")
    assert "torch.manual_seed(42)\nxm.set_rng_state(42)\n" in out
    assert "torch_xla.manual_seed(42)" in fixed(code, "XLA116")


def test_a_negative_literal_goes_through_initial_seed():
    # torch_xla.manual_seed(-1) raises TypeError; torch.manual_seed(-1) does not.
    code = TRAIN.replace("torch.manual_seed(args.seed)", "torch.manual_seed(-1)")
    assert "torch_xla.manual_seed(torch.initial_seed())" in fixed(code, "XLA116")


def test_quiet_when_the_xla_device_or_cuda_is_already_seeded():
    for extra in ("torch.cuda.manual_seed_all(args.seed)", "torch_xla.manual_seed(args.seed)"):
        code = TRAIN.replace(
            "torch.manual_seed(args.seed)", f"torch.manual_seed(args.seed)\n{extra}"
        )
        if "torch_xla" in extra:
            code = "import torch_xla\n" + src(code)
        assert findings(code, "XLA116") == []


def test_quiet_without_training_or_without_cuda():
    no_loop = src(TRAIN).split("for step")[0]
    assert findings(no_loop, "XLA116") == []
    cpu_only = TRAIN.replace(
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'torch.device("cpu")'
    )
    assert findings(cpu_only, "XLA116") == []


def test_quiet_on_a_script_already_written_for_xla():
    code = """
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm
    from torch import nn

    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(4, 1), nn.Dropout(0.1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        opt.zero_grad()
        model(torch.randn(2, 4, device=device)).sum().backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
    """
    assert findings(code, "XLA116") == []


def test_a_seed_in_the_parent_of_an_existing_launcher_is_left_alone():
    # The original's seed never reached the spawned workers either; the worker's own seed
    # is the one that matters, and it is fixed where it runs.
    code = """
    import torch
    import torch.multiprocessing as mp
    import torch.distributed as dist

    def worker(rank, seed):
        dist.init_process_group("nccl", rank=rank, world_size=2)
        torch.manual_seed(seed + rank)
        model = torch.nn.Linear(4, 1).cuda(rank)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            opt.zero_grad()
            model(torch.randn(2, 4).cuda(rank)).sum().backward()
            opt.step()

    if __name__ == "__main__":
        torch.manual_seed(0)
        mp.spawn(worker, nprocs=2, args=(0,))
    """
    (f,) = findings(code, "XLA116")
    assert f.span.start.line == 6 and f.fix.safe


def test_a_module_level_seed_of_a_script_the_launcher_may_wrap_gets_no_fix_there():
    code = """
    import torch
    import torch.distributed as dist

    torch.manual_seed(0)

    def main():
        dist.init_process_group("nccl")
        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            opt.zero_grad()
            model(torch.randn(2, 4).cuda()).sum().backward()
            opt.step()

    if __name__ == "__main__":
        main()
    """
    # Written there, even for review, the XLA seed would crash the launch XLA204 adds.
    (f,) = findings(code, "XLA116")
    assert f.fix is None and "Runtime is already initialized" in f.manual
    assert "function each replica runs" in f.manual


def test_a_seed_inside_an_expression_gets_advice_not_a_fix():
    code = TRAIN.replace(
        "torch.manual_seed(args.seed)", "gens = [torch.manual_seed(s) for s in (1, 2)]"
    )
    (f,) = findings(code, "XLA116")
    assert f.fix is None and "right after this seed" in f.manual


def test_rule_metadata():
    rule = get_rule("XLA116")
    assert rule is not None and rule.has_fix and "torch.manual_seed" in rule.hover


def test_a_module_level_seed_of_a_spawned_script_gets_advice_for_the_worker():
    # Each spawned worker re-imports the script: the module-level seed seeded its CUDA device,
    # but written there the XLA seed would also run in the launcher's parent.
    code = """
    import torch
    import torch.multiprocessing as mp

    torch.manual_seed(0)

    def worker(rank):
        model = torch.nn.Linear(4, 1).cuda(rank)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            opt.zero_grad()
            model(torch.randn(2, 4).cuda(rank)).sum().backward()
            opt.step()

    if __name__ == "__main__":
        torch.manual_seed(1)
        mp.spawn(worker, nprocs=2)
    """
    (f,) = findings(code, "XLA116")
    assert f.span.start.line == 3 and f.fix is None and "each worker runs" in f.manual


NATIVE_XLA = """
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch import nn

def run(loader):
    torch.manual_seed(0)
    device = "xla"
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in pl.MpDeviceLoader(loader, device):
        opt.zero_grad()
        (net(x) - y).pow(2).mean().backward()
        xm.optimizer_step(opt)
"""


def test_reported_after_the_device_fix_alone_put_the_script_on_xla():
    # XLA101's fix alone removes the only CUDA trace: the seed still needs the XLA seed.
    on_xla = "import torch_xla\n" + src(TRAIN).replace(
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")', "torch_xla.device()"
    )
    (f,) = findings(on_xla, "XLA116")
    assert f.fix.safe


def test_quiet_on_a_script_written_for_xla():
    # Its training loop runs through the XLA loader and optimizer step: the author chose
    # the seeding (here: CPU initial weights only).
    assert findings(NATIVE_XLA, "XLA116") == []
    # torch_xla API that no fix writes (metrics, sharding...) marks a hand-written script too.
    metrics = "import torch_xla.debug.metrics as met\n" + src(TRAIN).replace(
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")', '"xla"'
    )
    assert findings(metrics, "XLA116") == []
