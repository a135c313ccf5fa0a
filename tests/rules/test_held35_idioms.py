"""Held-out 35 idioms (pi-GAN, img2img-turbo): a device from the spawn index, a gloo group
under DDP, the GPU count from CUDA_VISIBLE_DEVICES, a CUDA device handed over positionally."""

from xla_lens.rules.base import Severity

from tests.helpers import findings, fixed

SPAWNED = """
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def train(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    device = torch.device(rank)
    model = DDP(torch.nn.Linear(4, 2).to(device), device_ids=[rank])
    x = torch.randn(8, 4, device=device)
    model(x).sum().backward()

if __name__ == "__main__":
    num_gpus = len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))
    mp.spawn(train, args=(num_gpus,), nprocs=num_gpus)
"""


def test_a_device_from_the_spawn_index_is_a_cuda_device_number():
    (f,) = [f for f in findings(SPAWNED, "XLA101") if "device number" in f.message]
    assert f.message.startswith("`torch.device(rank)` is CUDA device number `rank`")
    assert f.span.start.line == 8 and f.fix is not None
    assert "device = torch_xla.device()" in fixed(SPAWNED, "XLA101", unsafe=True)


def test_a_gloo_group_under_cuda_ddp_needs_the_xla_backend_for_review():
    (f,) = [f for f in findings(SPAWNED, "XLA205") if "gloo" in f.message]
    assert "ProcessGroupGloo::allgather: invalid tensor type" in f.message
    assert not f.fix.safe and "a gloo group of their own" in f.fix.review_reason
    out = fixed(SPAWNED, "XLA205", unsafe=True)
    assert 'dist.init_process_group("xla", rank=rank' in out


def test_a_gloo_group_without_ddp_or_cuda_stays():
    cpu = SPAWNED.replace("torch.device(rank)", 'torch.device("cpu")').replace(
        ", device_ids=[rank]", ""
    )
    assert not [f for f in findings(cpu, "XLA205") if "gloo" in f.message]
    no_ddp = SPAWNED.replace("model = DDP(", "model = (").replace(", device_ids=[rank])", ")")
    assert not [f for f in findings(no_ddp, "XLA205") if "gloo" in f.message]


def test_the_gpu_count_from_cuda_visible_devices_raises_on_an_xla_host():
    (f,) = [f for f in findings(SPAWNED, "XLA403") if "CUDA_VISIBLE_DEVICES" in f.message]
    assert "KeyError" in f.message and f.fix is None and f.severity == Severity.WARNING
    code = """
    import os
    gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")
    os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
    """
    (f,) = findings(code, "XLA403")
    assert "gives None (or the default)" in f.message and f.span.start.line == 1


def test_a_cuda_device_handed_over_positionally_is_offered_for_review():
    code = """
    import torch
    import warnings
    from pytorch_fid import fid_score
    def evaluate(model, device):
        return model(torch.zeros(2, device=device))
    evaluate(torch.nn.Linear(2, 2), "cuda")
    fid = fid_score.calculate_fid_given_paths(["a", "b"], 128, "cuda", 2048)
    warnings.warn("cuda")
    print("cuda")
    """
    found = [f for f in findings(code, "XLA101") if "hands" in f.message]
    assert [f.span.start.line for f in found] == [5, 6]
    assert all(not f.fix.safe for f in found)
    assert "check that `evaluate()` uses the value only as a device" in found[0].fix.review_reason
    assert "is not this script's" in found[1].fix.review_reason


def test_the_trained_model_saved_past_the_trainer():
    code = """
    from transformers import Trainer, TrainingArguments
    def main(model, ds):
        trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=ds)
        model.save_pretrained("before")
        trainer.train()
        trainer.model.save("out")
        model.save_pretrained("out")
        trainer.save_model("out")
    """
    found = [f for f in findings(code, "XLA108") if "past the Trainer" in f.message]
    assert [f.span.start.line for f in found] == [5, 6]
    assert "RuntimeError" in found[0].message and found[0].fix is None
    assert "trainer.save_model(" in found[0].manual


def test_a_save_past_two_trainings_is_said_once_and_a_given_state_is_the_callers():
    # FastChat's train_lora.py (held-out 38): ``trainer.train(resume_from_checkpoint=True)`` or
    # ``trainer.train()``, then ``model.save_pretrained(out, state_dict=state)`` with CPU copies.
    code = """
    from transformers import Trainer, TrainingArguments
    def main(model, ds, resume):
        trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=ds)
        if resume:
            trainer.train(resume_from_checkpoint=True)
        else:
            trainer.train()
        model.save_pretrained("out")
        model.save_pretrained("lora", state_dict=cpu_state)
        model.save_pretrained("own", state_dict=model.state_dict())
    """
    found = [f for f in findings(code, "XLA108") if "past the Trainer" in f.message]
    assert [f.span.start.line for f in found] == [7, 9]


def test_a_class_spawned_per_process_runs_in_the_replicas_not_the_parent():
    # RobustVideoMatting: mp.spawn(Trainer, ...) builds the trainer in each process, so the
    # moves in its methods are replica code, not the launcher's parent.
    code = """
    import torch
    import torch.multiprocessing as mp

    class Trainer:
        def __init__(self, rank, world_size):
            self.rank = rank
            self.init_model()

        def init_model(self):
            self.model = torch.nn.Linear(4, 2).to(self.rank)

    if __name__ == "__main__":
        mp.spawn(Trainer, nprocs=2, args=(2,), join=True)
    """
    (f,) = [f for f in findings(code, "XLA101") if "self.rank" in f.message]
    assert "parent process" not in f.message
    assert "parent process" not in (f.fix.review_reason if f.fix else "")


def test_a_validation_loop_inside_the_training_loop_reports_each_read_once():
    code = """
    import torch
    device = torch.device("cuda")
    def train(model, opt, loader, val_loader):
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 100 == 1:
                model.eval()
                scores = []
                with torch.no_grad():
                    for vx, vy in val_loader:
                        v = torch.nn.functional.mse_loss(model(vx.to(device)), vy.to(device))
                        scores.append(v.item())
                model.train()
    """
    reads = [f for f in findings(code, "XLA401") if f.span.start.line == 12]
    assert len(reads) == 1 and "evaluation loop on line 11" in reads[0].message


def test_an_autocast_dtype_chosen_from_the_device_becomes_bf16_for_review():
    # nanoVLM: on the XLA device `device.type in ['cuda', 'cpu']` is False: float16.
    code = """
    import torch
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 2).to(device)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16 if device.type in ['cuda', 'cpu'] else torch.float16):
        y = model(torch.randn(2, 4, device=device))
    """
    (f,) = findings(code, "XLA102")
    assert not f.fix.safe and "the dtype was chosen from the device" in f.fix.review_reason
    out = fixed(code, "XLA102", unsafe=True)
    assert 'torch.autocast("xla", dtype=torch.bfloat16):' in out and "torch.float16" not in out


def test_save_pretrained_of_a_model_the_script_moves():
    code = """
    import torch
    device = torch.device("cuda")
    model = build().to(device)
    tokenizer = load_tokenizer()
    for x in loader:
        model(x.to(device)).sum().backward()
    eval_model = model.module if ddp else model
    eval_model.save_pretrained("ckpt")
    tokenizer.save_pretrained("ckpt")
    """
    (f,) = [f for f in findings(code, "XLA108") if "save_pretrained" in f.message]
    assert f.span.start.line == 7 and f.fix is None and "RuntimeError" in f.message
