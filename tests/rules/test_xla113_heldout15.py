"""XLA113 / XLA108, held-out 15: a file per replica (the path is built from the rank through
a name) is no shared write, and its xm.save advice keeps every replica's file; a writer
object built and used only under a rank check held in a name (``is_root``) writes once."""

from tests.helpers import findings, src

PER_RANK_FILE = src("""
import os
import torch
import torch.distributed as dist

def main():
    rank = int(os.environ["RANK"])
    dist.init_process_group("nccl")
    state = torch.zeros(4, 8).cuda()
    state_path = os.path.join("dump", "state" + str(rank) + ".pth")
    if os.path.isfile(state_path):
        state = torch.load(state_path)["state"]
    for step in range(3):
        state[step] = torch.randn(8).cuda()
    torch.save({"state": state}, state_path)
    with open(os.path.join("dump", f"log_{rank}.txt"), "w") as f:
        f.write("done")

if __name__ == "__main__":
    main()
""")

SHARED_FILE = PER_RANK_FILE.replace('"state" + str(rank) + ".pth"', '"state.pth"')


def test_a_file_named_after_the_rank_is_no_shared_write():
    assert findings(PER_RANK_FILE, "XLA113") == []
    (shared,) = findings(SHARED_FILE, "XLA113")
    assert "every replica writes the same file" in shared.message


def test_xm_save_advice_keeps_every_replicas_file():
    (f,) = findings(PER_RANK_FILE, "XLA108")
    assert f.manual is not None and "master_only=False" in f.manual
    assert "unless given master_only=False" in f.message
    (g,) = findings(SHARED_FILE, "XLA108")
    assert g.manual is not None and "master_only=False" not in g.manual


ROOT_WRITER = src("""
import json
import torch
import torch_xla
import torch_xla.core.xla_model as xm


class Metrics:
    def __init__(self, path):
        self.path = path

    def write(self, data):
        with open(self.path, "w") as f:
            json.dump(data, f)


def _mp_fn(index):
    device = torch_xla.device()
    is_root = xm.is_master_ordinal(local=False)
    if is_root:
        metrics = Metrics("metrics.json")
    model = torch.nn.Linear(4, 1).to(device)
    loss = model(torch.ones(2, 4, device=device)).sum()
    loss.backward()
    torch_xla.sync()
    if is_root:
        metrics.write({"loss": loss.item()})


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
""")


def test_a_writer_used_only_under_a_rank_check_held_in_a_name_writes_once():
    assert findings(ROOT_WRITER, "XLA113") == []
    unguarded = ROOT_WRITER.replace(
        "    if is_root:\n        metrics.write", "    if True:\n        metrics.write"
    ).replace(
        "    if is_root:\n        metrics = Metrics", "    if True:\n        metrics = Metrics"
    )
    assert [f.code for f in findings(unguarded, "XLA113")] == ["XLA113"]


BUILT_ON_ROOT = src("""
import json
import os
import torch
import torch.distributed as dist


class Results:
    def __init__(self, path):
        self.path = path

    def _rewrite(self, data):
        with open(self.path, "w") as f:
            json.dump(data, f)

    def store(self, data):
        self.save(data)  # reaches _rewrite by a name xla-lens cannot follow


def main():
    dist.init_process_group("xla", init_method="xla://")
    is_root = dist.get_rank() == 0
    if is_root:
        results = Results("results.json")
    for step in range(3):
        if is_root:
            results.store({"step": step})
""")


def test_methods_of_a_class_built_only_on_the_root_replica_write_once():
    assert findings(BUILT_ON_ROOT, "XLA113") == []
    everywhere = BUILT_ON_ROOT.replace(
        '    if is_root:\n        results = Results("results.json")',
        '    results = Results("results.json")',
    )
    assert [f.code for f in findings(everywhere, "XLA113")] == ["XLA113"]
