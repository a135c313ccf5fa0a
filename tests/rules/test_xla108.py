from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

SAVES = """
import torch

torch.save(model.state_dict(), "model.pt")
ckpt = {"model": model.state_dict(), "opt": {"state": optimizer.state_dict()}, "epoch": epoch}
torch.save(ckpt, path)
torch.save(f=path, obj=model.module.state_dict())
"""


def test_state_dict_checkpoints_become_xm_save_in_both_targets():
    found = findings(SAVES, "XLA108")
    assert [f.span.start.line for f in found] == [2, 4, 5]
    assert all("master ordinal" in f.message and "CPU" in f.message for f in found)
    expected = src(
        """
        import torch
        import torch_xla.core.xla_model as xm

        xm.save(model.state_dict(), "model.pt")
        ckpt = {"model": model.state_dict(), "opt": {"state": optimizer.state_dict()}, "epoch": epoch}
        xm.save(ckpt, path)
        xm.save(model.module.state_dict(), path)
        """
    )
    assert fixed(SAVES, "XLA108") == expected
    assert fixed(SAVES, "XLA108", target="legacy") == expected


def test_aliases_are_followed_and_the_xm_alias_reused():
    code = """
    from torch import save
    import torch_xla.core.xla_model as X

    save({"model": net.state_dict()},
         "ckpt.pt")  # keep
    """
    assert fixed(code, "XLA108") == src(
        """
        from torch import save
        import torch_xla.core.xla_model as X

        X.save({"model": net.state_dict()},
             "ckpt.pt")  # keep
        """
    )


def test_pickle_options_make_it_manual():
    code = """
    import torch
    torch.save(model.state_dict(), "m.pt", pickle_protocol=4)
    """
    (f,) = findings(code, "XLA108")
    assert f.fix is None and "pickle" in f.manual


def test_non_checkpoints_and_xm_save_report_nothing():
    code = """
    import torch
    import torch_xla.core.xla_model as xm
    xm.save(model.state_dict(), "m.pt")
    torch.save(tensor, "t.pt")
    torch.save({"losses": losses}, "l.pt")
    other.save(model.state_dict())
    """
    for target in ("modern", "legacy"):
        assert findings(code, "XLA108", target) == []


def test_hover_mentions_cpu_and_master_ordinal():
    rule = get_rule("XLA108")
    assert rule is not None
    text = rule.hover["torch.save"]
    assert "xm.save" in text and "CPU" in text and "master" in text
    assert "legacy" in text and "modern" in text


GUARDED = """
import torch
import torch.distributed as dist

dist.init_process_group("xla")
rank = dist.get_rank()
if rank == 0:
    torch.save(model.state_dict(), "ckpt.pt")
"""


def test_legacy_save_under_a_rank_check_needs_review():
    # torch_xla 1.x's xm.save meets every replica at a rendezvous: under `if rank == 0`
    # the others never arrive.
    (f,) = findings(GUARDED, "XLA108", target="legacy")
    assert (
        not f.fix.safe and "rendezvous" in f.fix.review_reason and "line 6" in f.fix.review_reason
    )
    assert fixed(GUARDED, "XLA108", target="legacy") == src(GUARDED)
    # torch_xla 2.x's xm.save has no rendezvous: the same swap is safe there.
    (f,) = findings(GUARDED, "XLA108", target="modern")
    assert f.fix.safe
    assert 'xm.save(model.state_dict(), "ckpt.pt")' in fixed(GUARDED, "XLA108")


def test_one_file_per_replica_keeps_every_replica_writing():
    code = """
    import torch
    torch.save(model.state_dict(), f"ckpt_rank{rank}.pt")
    torch.save(obj=model.state_dict(), f=f"opt_{local_rank}.pt")
    """
    out = fixed(code, "XLA108")
    assert 'xm.save(model.state_dict(), f"ckpt_rank{rank}.pt", master_only=False)' in out
    assert 'xm.save(model.state_dict(), f"opt_{local_rank}.pt", master_only=False)' in out


def test_a_file_named_for_the_process_gpu_is_one_per_replica_too():
    # Held-out 83 (HigherHRNet's dist_train.py): `main_worker(gpu, ...)` saves
    # 'final_state{}.pth.tar'.format(gpu) from every process; a master-only xm.save dropped
    # every other process's file. A count or a per-GPU size in the path is not an index.
    code = """
    import os
    import torch

    def main_worker(gpu, ngpus_per_node, out_dir):
        final_file = os.path.join(out_dir, "final_state{}.pth.tar".format(gpu))
        torch.save(model.state_dict(), final_file)
        torch.save(model.state_dict(), f"w_{ngpus_per_node}gpus_{images_per_gpu}.pt")
    """
    out = fixed(code, "XLA108")
    assert "xm.save(model.state_dict(), final_file, master_only=False)" in out
    assert 'xm.save(model.state_dict(), f"w_{ngpus_per_node}gpus_{images_per_gpu}.pt")\n' in out


def test_a_checkpoint_helper_is_followed_to_what_its_callers_pass():
    code = """
    import torch

    def save_checkpoint(state, is_best, filename="checkpoint.pth.tar"):
        torch.save(state, filename)

    save_checkpoint({"epoch": 3, "state_dict": model.state_dict()}, True)
    save_checkpoint(state={"state_dict": model.state_dict(), "best": best}, is_best=False)
    """
    (f,) = findings(code, "XLA108")
    assert "xm.save(state, filename)" in fixed(code, "XLA108")
    # A helper that some caller hands something else is left alone.
    other = code + 'save_checkpoint(["not", "a", "checkpoint"], False)\n'
    assert findings(other, "XLA108") == []


def test_legacy_rank_check_around_the_helper_call_needs_review_too():
    code = """
    import torch
    import torch.distributed as dist

    def save_checkpoint(state, filename):
        torch.save(state, filename)

    dist.init_process_group("xla")
    if dist.get_rank() == 0:
        save_checkpoint({"state_dict": model.state_dict()}, "ckpt.pt")
    """
    (f,) = findings(code, "XLA108", target="legacy")
    assert not f.fix.safe and "rendezvous" in f.fix.review_reason
    (f,) = findings(code, "XLA108", target="modern")
    assert f.fix.safe


SNAPSHOT = """
import io
from dataclasses import asdict, dataclass

import torch


@dataclass
class Snapshot:
    model_state: dict
    optimizer_state: dict
    finished_epoch: int


def upload(obj, dst):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    send(buffer, dst)


class Trainer:
    def _save_snapshot(self, epoch):
        snapshot = Snapshot(
            model_state=self.model.state_dict(),
            optimizer_state=self.optimizer.state_dict(),
            finished_epoch=epoch,
        )
        snapshot = asdict(snapshot)
        if self.path.startswith("s3://"):
            upload(snapshot, self.path)
        else:
            torch.save(snapshot, self.path)

    def train(self):
        for epoch in range(3):
            if self.local_rank == 0:
                self._save_snapshot(epoch)
"""


def test_a_dataclass_checkpoint_and_a_dict_call_are_checkpoints_too():
    found = findings(SNAPSHOT, "XLA108")
    assert [f.span.start.line + 1 for f in found] == [16, 31]
    assert all(f.fix.safe for f in found)
    out = fixed(SNAPSHOT, "XLA108")
    assert "xm.save(snapshot, self.path)" in out and "xm.save(obj, buffer)" in out
    code = """
    import torch
    torch.save(dict(model=net.state_dict(), step=step), "ckpt.pt")
    """
    assert len(findings(code, "XLA108")) == 1


def test_a_slotted_dataclass_is_not_taken_for_a_checkpoint():
    # xm.save rebuilds objects through __dict__: a slotted instance would keep XLA tensors.
    code = SNAPSHOT.replace("@dataclass\n", "@dataclass(slots=True)\n").replace(
        "        snapshot = asdict(snapshot)\n", ""
    )
    assert [f.span.start.line + 1 for f in findings(code, "XLA108")] == []


def test_an_in_memory_buffer_of_unguarded_replicas_needs_review():
    # xm.save writes on the master only: the other replicas' buffers would stay empty.
    code = SNAPSHOT.replace("if self.local_rank == 0:", "if True:") + (
        "\ntorch.distributed.init_process_group('nccl')\n"
    )
    by_line = {f.span.start.line + 1: f for f in findings(code, "XLA108")}
    assert not by_line[16].fix.safe and "in-memory buffer" in by_line[16].fix.review_reason
    assert by_line[31].fix.safe


def test_a_whole_module_on_the_device_is_reported_without_a_fix():
    code = """
    import torch
    model = Net().to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with open(path, "wb") as f:
        torch.save(model, f)
    torch.save(optimizer, "opt.pt")
    torch.save(batch.to(device), "batch.pt")
    """
    # The batch is device data, no module (held-out 8 H9): reported with advice
    # (tests/rules/test_xla108_device_data.py); the optimizer object is not reported.
    f, batch = findings(code, "XLA108")
    assert f.span.start.line == 5 and f.fix is None
    assert "nn.Parameter" in f.message and "model.state_dict()" in f.manual
    assert batch.span.start.line == 7 and batch.fix is None
    assert fixed(code, "XLA108") == src(code)


def test_a_module_attribute_moved_with_cuda_is_a_whole_module_too():
    code = """
    import torch
    class T:
        def __init__(self, net):
            self.net = net.cuda()
        def save(self):
            self.net.eval()
            torch.save(self.net, "net.pt")
    """
    (f,) = findings(code, "XLA108")
    assert f.fix is None and "`self.net`" in f.message


def test_the_wrapped_model_of_a_placed_data_parallel_is_a_whole_module_too():
    # held-out 130 (pytorch-retinanet): `torch.save(net.module, path)` saves the wrapped model,
    # whose parameters the wrapper's `.cuda()` placed.
    code = """
    import torch
    net = torch.nn.DataParallel(Net()).cuda()
    optimizer = torch.optim.Adam(net.parameters())
    torch.save(net.module, "net.pt")
    torch.save(cfg.module, "cfg.pt")
    """
    (f,) = findings(code, "XLA108")
    assert f.fix is None and f.span.start.line == 3 and "`net.module`" in f.message


def test_a_library_or_script_built_partial_state_dict_is_a_checkpoint():
    # held-out 9 r2 (LoRA: torch.save({"model_state_dict": lora.lora_state_dict(model)}, p)).
    code = """
    import torch
    import loralib as lora

    def trainable(model):
        return {k: v for k, v in model.state_dict().items() if "lora_" in k}

    def save(model, path):
        torch.save({"model_state_dict": lora.lora_state_dict(model)}, path)
        torch.save(trainable(model), path + ".t")
        torch.save({"step": 3}, path + ".meta")
    """
    lines = [f.span.start.line for f in findings(code, "XLA108")]
    assert lines == [7, 8]


def test_a_module_moved_to_the_cpu_to_save_its_state_is_saved_without_moving():
    # held-out 28 (SPADE's save_network): measured on torch_xla 2.9, `net.cpu()` then
    # `net.to(xla)` leaves an optimizer built before stepping parameters the model no longer
    # has (its weights stop changing). xm.save copies the state without moving the module.
    code = """
    import torch
    def save_network(net, path, opt):
        torch.save(net.cpu().state_dict(), path)
        if len(opt.gpu_ids) and torch.cuda.is_available():
            net.cuda()
    """
    (f,) = findings(code, "XLA108")
    assert "`net.cpu()` moves the module itself to the CPU" in f.message
    assert not f.fix.safe and "net then stays on the XLA device" in f.fix.review_reason
    out = fixed(code, "XLA108", unsafe=True)
    assert "xm.save(net.state_dict(), path)" in out
    assert "torch.save(net.cpu().state_dict(), path)" in fixed(code, "XLA108")


def test_a_state_dict_copied_to_the_cpu_entry_by_entry_is_left_alone():
    # Continual-Learning-Benchmark's save_model (held-out 75): every entry is made a CPU copy
    # before torch.save, so the file already loads anywhere.
    code = """
    import torch

    def save_model(model, filename):
        state = model.state_dict()
        for key in state.keys():
            state[key] = state[key].cpu()
        torch.save(state, filename + ".pth")

    def save_comprehension(model, filename):
        state = {k: v.cpu() for k, v in model.state_dict().items()}
        torch.save(state, filename)

    def save_plain(model, filename):
        state = model.state_dict()
        torch.save(state, filename)
    """
    (f,) = findings(code, "XLA108")
    assert f.span.start.line == 14


def test_the_final_save_of_a_module_moved_to_the_cpu_is_left_alone():
    # Held-out 86 (HTR-best-practices): after the epoch loop, `torch.save(
    # trainer.net.cpu().state_dict(), path)`: the file holds CPU tensors and nothing steps
    # the moved module again. The same save inside the loop still makes training stop.
    code = """
    import torch

    net = torch.nn.Linear(2, 2).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(3):
        loss = net(torch.randn(4, 2).cuda()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(net.cpu().state_dict(), "final.pt")
    """
    assert findings(code, "XLA108") == []
    inside = code.replace(
        "        opt.step()\n",
        '        opt.step()\n        torch.save(net.cpu().state_dict(), "e.pt")\n',
    )
    assert len(findings(inside, "XLA108")) == 1
