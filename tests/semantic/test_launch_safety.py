"""A conversion never writes an XLA runtime call where the launcher's parent runs it:
torch_xla.launch then refuses to start ('Runtime is already initialized')."""

from __future__ import annotations

from tests.helpers import findings, fixed, src

LAUNCHED = """
import os
import torch
import torch.distributed as dist
import torch_xla

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
world_size = int(os.environ["WORLD_SIZE"])

def train(rank):
    local = torch.device("cuda")
    x = torch.zeros(3).to(local)

def _mp_fn(index):
    dist.init_process_group("xla", init_method="xla://")
    train(index)

if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
"""


def test_runtime_calls_in_parent_code_of_a_launched_script_get_no_fix():
    by_line = {
        f.span.start.line + 1: f for f in findings(LAUNCHED) if f.code not in ("XLA204", "XLA202")
    }
    # The module-level picker runs in the parent before torch_xla.launch: accepted, its fix
    # would make the launch fail (held-out 59), so none is offered and the advice says where.
    f = by_line[6]
    assert f.fix is None, (f.code, f.message)
    assert "no fix here" in f.message and "Runtime is already initialized" in f.manual
    # The env read there would only become a runtime read: no fix at all (a review fix would
    # still be written by --unsafe-fixes), and the finding says where to read it instead.
    (ws,) = [f for f in findings(LAUNCHED, "XLA202") if f.span.start.line + 1 == 7]
    assert ws.fix is None and "no fix here" in ws.message and "parent process" in ws.message
    assert "inside the function each replica runs" in ws.manual
    assert "Runtime is already initialized" in ws.manual
    # Code the replica runs (train() is called from _mp_fn) is fine.
    assert by_line[10].fix.safe
    converted = fixed(LAUNCHED)
    assert 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")' in converted
    assert "    local = torch_xla.device()" in converted


def test_single_process_scripts_keep_their_safe_module_level_fixes():
    code = """
    import torch
    device = torch.device("cuda")
    model = torch.nn.Linear(2, 2).to(device)
    """
    (f,) = [f for f in findings(code) if f.code == "XLA101"]
    assert f.fix.safe
    assert "torch_xla.device()" in fixed(code, "XLA101")
    assert src(code)


SPAWNED = """
import os
import torch.multiprocessing as mp

def worker(index, world_size):
    rank = int(os.environ["RANK"])

def main():
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    mp.spawn(worker, nprocs=world_size, args=(world_size,))

if __name__ == "__main__":
    main()
"""


def test_the_function_that_calls_mp_spawn_stays_parent_code():
    # XLA204 swaps mp.spawn for torch_xla.launch here (it adds no _mp_fn around main()): main()
    # still runs in the parent, so its env read must not become xr.world_size() (held-out
    # imagenet: "Runtime is already initialized" once the launch fix is accepted).
    by_line = {f.span.start.line + 1: f for f in findings(SPAWNED, "XLA202")}
    parent = by_line[8]
    assert parent.fix is None and "Runtime is already initialized" in parent.manual
    assert "no fix here" in parent.message and "line 8" in parent.message
    # The spawned worker is a replica: xr.global_ordinal() is right there once torch_xla.launch
    # replaces mp.spawn (XLA204's fix, for review), so the rewrite is for review too: under
    # mp.spawn the runtime numbers every process 0 of 1 (rules/parts/foreign_launcher.py).
    worker = by_line[5].fix
    assert not worker.safe and "torch.multiprocessing.spawn (line 9)" in worker.review_reason
    converted = fixed(SPAWNED, "XLA202", unsafe=True)
    assert 'world_size = int(os.environ.get("WORLD_SIZE", 1))' in converted
    assert "rank = xr.global_ordinal()" in converted


def test_the_entry_the_guard_rewrite_wraps_is_replica_code_whatever_its_name():
    code = """
    import os
    import torch.distributed as dist

    def train():
        dist.init_process_group("nccl")
        world_size = int(os.environ["WORLD_SIZE"])

    if __name__ == "__main__":
        train()
    """
    (f,) = findings(code, "XLA202")
    assert f.fix.safe, f.message  # _mp_fn(index) will call train(): it runs in the replica


def test_a_helper_the_parent_calls_before_the_launch_is_parent_code_even_if_a_replica_calls_it():
    code = """
    import os
    import torch.multiprocessing as mp

    def get_world_size():
        return int(os.environ["WORLD_SIZE"])

    def worker(index):
        print(get_world_size())

    def main():
        mp.spawn(worker, nprocs=get_world_size())

    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA202")
    assert f.fix is None and "Runtime is already initialized" in f.manual


def test_a_reviewed_sentinel_in_parent_code_loses_its_fix_and_its_stale_review_note():
    code = """
    import os
    import torch.multiprocessing as mp

    def worker(index):
        pass

    def main():
        local_rank = int(os.environ.get("LOCAL_RANK", -1))
        mp.spawn(worker, nprocs=2)

    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA202")
    assert f.fix is None and "needs review" not in f.message and "no fix here" in f.message


SPAWNED_COUNT = """
import torch
import torch.multiprocessing as mp

def run(rank, n):
    print(rank, n)

def main():
    n_gpus = torch.cuda.device_count()
    mp.spawn(run, nprocs=n_gpus, args=(n_gpus,))

if __name__ == "__main__":
    main()
"""


def test_advice_to_query_the_runtime_is_not_given_for_parent_code():
    """XLA403's advice for a CUDA device count is the runtime's world size: right in a replica,
    fatal where the launcher's parent runs it before the launch."""
    (count,) = [f for f in findings(SPAWNED_COUNT) if f.code == "XLA403"]
    assert count.fix is None
    assert "xr.world_size()" not in count.manual.split("Inside the launched function")[0]
    assert "Runtime is already initialized" in count.manual
    assert "one process per device" in count.manual
    in_replica = SPAWNED_COUNT.replace("print(rank, n)", "print(rank, torch.cuda.device_count())")
    advice = {f.span.start.line + 1: f.manual for f in findings(in_replica) if f.code == "XLA403"}
    assert "xr.world_size()" in advice[5] and "Runtime is already" not in advice[5]


TORCHRUN_MAIN_BLOCK = """
import os
import torch
import torch.distributed as dist
from torch.utils import data


def sampler_for(ds, distributed):
    if distributed:
        return data.distributed.DistributedSampler(ds, shuffle=True)
    return data.RandomSampler(ds)


def train(loader, model, opt):
    for x in loader:
        loss = model(x.float().unsqueeze(1).to("cuda")).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    distributed = int(os.environ.get("WORLD_SIZE", 1)) > 1
    if distributed:
        dist.init_process_group(backend="nccl", init_method="env://")
    ds = list(range(8))
    loader = data.DataLoader(ds, batch_size=2, sampler=sampler_for(ds, distributed))
    model = torch.nn.Linear(1, 1).to("cuda")
    train(loader, model, torch.optim.SGD(model.parameters(), lr=0.1))
"""


def test_a_review_fix_for_the_launcher_still_says_it_runs_in_the_parent():
    """With --unsafe-fixes XLA204 adds torch_xla.launch, and the sampler (built by the
    __main__ block) would then query the runtime in the parent: XLA203's reason must say so
    too, not only name the launcher. (Built after torchrun's group, under the same flag, the
    sampler needs nothing: held-out 47; so the group is built after it here.)"""
    code = TORCHRUN_MAIN_BLOCK.replace(
        '    if distributed:\n        dist.init_process_group(backend="nccl", init_method="env://")\n',
        "",
    ).replace(
        "    model = torch.nn.Linear(1, 1)",
        '    if distributed:\n        dist.init_process_group(backend="nccl", init_method="env://")\n'
        "    model = torch.nn.Linear(1, 1)",
    )
    (f,) = [f for f in findings(code) if f.code == "XLA203"]
    assert not f.fix.safe
    assert "torchrun" in f.fix.review_reason
    assert "Runtime is already initialized" in f.fix.review_reason
    assert [f for f in findings(TORCHRUN_MAIN_BLOCK) if f.code == "XLA203"] == []


def test_seeding_printing_and_saving_on_xla_are_runtime_calls():
    # Measured on torch_xla 2.9: torch_xla.manual_seed(0) or xm.master_print(...) before
    # xmp.spawn makes the launch raise "Runtime is already initialized".
    from xla_lens.semantic.launch import emits_runtime_call

    for code in (
        "torch_xla.manual_seed(0)",
        "xm.set_rng_state(1)",
        'xm.master_print("x")',
        "xm.save(state, path)",
        "torch_xla.device()",
    ):
        assert emits_runtime_call(code), code
    # A sync goes only into training loops (in the parent, the loop itself must move).
    for code in ("torch.manual_seed(0)", "print(xm)", "np.save(path, a)", "torch_xla.sync()"):
        assert not emits_runtime_call(code), code
