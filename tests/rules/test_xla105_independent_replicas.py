"""XLA105: in a script that starts several replicas (torchrun with a process group,
mp.spawn, the XLA launcher) but reduces no gradients of its own (no DDP/FSDP, no
all_reduce of the gradients), each replica trains its own model. xm.optimizer_step
all-reduces the gradients when the world has more than one process and would make them
train one model: a change of meaning, so the fix waits for review (optimizer.step() plus
the sync XLA107 adds keeps the replicas independent). With DDP nothing changes."""

from tests.helpers import findings, fixed, src

CODE = "XLA105"

SOLO_REPLICAS = """
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device = torch.device("cuda", rank)
    net = torch.nn.Linear(5, 1).to(device)
    sgd = torch.optim.SGD(net.parameters(), lr=0.05)
    for _ in range(4):
        inp = torch.full((6, 5), float(rank), device=device)
        net(inp).square().mean().backward()
        sgd.step()
        sgd.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_replicas_without_ddp_keep_their_plain_step_unless_reviewed():
    (f,) = findings(SOLO_REPLICAS, CODE)
    assert not f.fix.safe
    reason = f.fix.review_reason
    assert "train independently" in reason and "torch_xla.sync()" in reason
    # What the file shows, not more: a model class of another module may wrap itself in DDP
    # (held-out 102's simclr-pytorch).
    assert "nothing this file shows reduces them" in reason
    assert fixed(SOLO_REPLICAS, CODE) == src(SOLO_REPLICAS)
    # Offered for review, it is still the same rewrite.
    assert "xm.optimizer_step(sgd)" in fixed(SOLO_REPLICAS, CODE, unsafe=True)


def test_spawned_replicas_without_a_reducer_wait_for_review_too():
    code = """
    import torch
    import torch.multiprocessing as mp


    def worker(rank, world):
        net = torch.nn.Linear(5, 1).to("cuda")
        sgd = torch.optim.SGD(net.parameters(), lr=0.05)
        for _ in range(4):
            net(torch.randn(6, 5, device="cuda")).square().mean().backward()
            sgd.step()


    if __name__ == "__main__":
        mp.spawn(worker, args=(2,), nprocs=2)
    """
    (f,) = findings(code, CODE)
    assert not f.fix.safe and "train independently" in f.fix.review_reason


def test_with_ddp_the_step_is_left_alone_as_before():
    code = src(SOLO_REPLICAS).replace(
        "    sgd = torch.optim.SGD(",
        "    net = torch.nn.parallel.DistributedDataParallel(net)\n    sgd = torch.optim.SGD(",
    )
    assert findings(code, CODE) == []


def test_a_single_process_script_keeps_the_safe_fix():
    code = (
        src(SOLO_REPLICAS)
        .replace('    dist.init_process_group("nccl")\n', "")
        .replace("dist.get_rank()", "0")
    )
    (f,) = findings(code, CODE)
    assert f.fix.safe


def test_a_sampler_alone_starts_no_replicas():
    # pytorch/examples shape: the DistributedSampler only when a flag asks, no process group
    # and no launcher here: one process, the fix stays safe.
    code = """
    import torch
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler


    def run(net, sgd, loader, device):
        for inp in loader:
            net(inp.to(device)).square().mean().backward()
            sgd.step()


    def main(ds, spread=False):
        device = torch.device("cuda")
        net = torch.nn.Linear(5, 1).to(device)
        sampler = DistributedSampler(ds) if spread else None
        sgd = torch.optim.SGD(net.parameters(), lr=0.1)
        run(net, sgd, DataLoader(ds, sampler=sampler), device)


    if __name__ == "__main__":
        main(None)
    """
    (f,) = findings(code, CODE)
    assert f.fix.safe


def test_the_xla_launcher_starts_replicas_too():
    code = """
    import torch
    import torch_xla


    def _mp_fn(index):
        net = torch.nn.Linear(5, 1).to(torch_xla.device())
        sgd = torch.optim.SGD(net.parameters(), lr=0.05)
        for _ in range(4):
            net(torch.randn(6, 5, device=torch_xla.device())).square().mean().backward()
            sgd.step()
            torch_xla.sync()


    if __name__ == "__main__":
        torch_xla.launch(_mp_fn)
    """
    (f,) = findings(code, CODE)
    assert not f.fix.safe and "train independently" in f.fix.review_reason
    legacy = findings(code, CODE, target="legacy")[0].fix.review_reason
    assert "xm.mark_step()" in legacy
