"""XLA108's xm.save rebuilds every container it saves as a plain one (measured below on the
installed torch_xla: Counter, defaultdict and OrderedDict come back as dict, a tuple as a
list). A checkpoint holding a MultiStepLR state (milestones: a Counter) or a Counter of the
script's own waits for review (held-out 85, 3D-ResNets: a resumed `scheduler.step(epoch)`
raised AttributeError). A state dict taken after the module moved to the CPU needs no swap."""

import os
import subprocess
import sys

from tests.helpers import findings, fixed, src

SAVE = src("""
import torch
from torch.optim import SGD, lr_scheduler


def save_checkpoint(path, epoch, model, optimizer, scheduler):
    states = {
        "epoch": epoch,
        "state_dict": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
    }
    torch.save(states, path)


def main(model, epochs):
    model = model.cuda()
    optimizer = SGD(model.parameters(), lr=0.1)
    scheduler = SCHEDULER
    for epoch in range(epochs):
        optimizer.step()
        scheduler.step()
        save_checkpoint("ckpt.pth", epoch, model, optimizer, scheduler)
""")


def _save(code: str):
    (f,) = [f for f in findings(code, "XLA108") if "torch.save" in f.message]
    return f


def test_a_multistep_scheduler_state_makes_the_swap_wait_for_review():
    f = _save(SAVE.replace("SCHEDULER", "lr_scheduler.MultiStepLR(optimizer, [30, 60])"))
    assert f.fix is not None and not f.fix.safe
    assert "MultiStepLR" in f.fix.review_reason and "Counter" in f.fix.review_reason
    assert "scheduler.step(epoch)" in f.fix.review_reason


def test_other_schedulers_keep_the_swap_safe():
    f = _save(SAVE.replace("SCHEDULER", "lr_scheduler.StepLR(optimizer, 30)"))
    assert f.fix is not None and f.fix.safe
    assert "xm.save(states, path)" in fixed(
        SAVE.replace("SCHEDULER", "lr_scheduler.StepLR(optimizer, 30)"), "XLA108"
    )


def test_a_counter_of_the_script_makes_the_swap_wait_for_review():
    code = SAVE.replace("SCHEDULER", "lr_scheduler.StepLR(optimizer, 30)").replace(
        '        "epoch": epoch,\n', '        "epoch": epoch,\n        "seen": Counter(),\n'
    )
    code = "from collections import Counter\n" + code
    f = _save(code)
    assert not f.fix.safe and "`Counter()`" in f.fix.review_reason


def test_a_state_dict_of_a_module_moved_to_the_cpu_needs_no_swap():
    # Held-out 85's TPU control: `state_dict = model.models[0].to('cpu').state_dict()`.
    code = """
    import torch

    def finish(model, path):
        model = model.cuda()
        state_dict = model.to("cpu").state_dict()
        torch.save(state_dict, path)
    """
    assert findings(code, "XLA108") == []


def test_xm_save_gives_plain_containers_back(tmp_path):
    code = (
        "import collections, torch, torch_xla, torch_xla.core.xla_model as xm\n"
        "sd = torch.nn.Linear(2, 2).to(torch_xla.device()).state_dict()\n"
        "d = {'sd': sd, 'c': collections.Counter([1]), 't': (1, 2)}\n"
        f"xm.save(d, {str(tmp_path / 'x.pt')!r})\n"
        f"ck = torch.load({str(tmp_path / 'x.pt')!r}, weights_only=False)\n"
        "print(*[type(ck[k]).__name__ for k in ('sd', 'c', 't')])\n"
    )
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["dict", "dict", "list"]


CONFIG_SAVE = src("""
import torch
from omegaconf import DictConfig


def training_loop(cfg: DictConfig, model, optimizer, args):
    model = model.cuda()
    for step in range(3):
        optimizer.step()
    checkpoint = {
        ENTRY,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
    }
    torch.save(checkpoint, "last.pt")
""")


def test_a_config_object_or_class_in_the_checkpoint_makes_the_swap_wait_for_review():
    # Held-out 88 (piano-gpt): `"run_config": cfg` (OmegaConf) made xm.save raise TypeError
    # at the first save; torch.save pickles it.
    for entry, what in (('"run_config": cfg', "an OmegaConf config"), ('"cls": Net', "a class")):
        code = CONFIG_SAVE.replace("ENTRY", entry)
        if "Net" in entry:
            code += "\n\nclass Net(torch.nn.Module):\n    pass\n"
        f = _save(code)
        assert not f.fix.safe and what in f.fix.review_reason and "TypeError" in f.fix.review_reason
    # An argparse namespace is copied fine (measured below): the swap stays safe.
    assert _save(CONFIG_SAVE.replace("ENTRY", '"args": args')).fix.safe


def test_xm_save_raises_on_a_class_where_torch_save_does_not(tmp_path):
    code = (
        "import argparse, torch, torch_xla, torch_xla.core.xla_model as xm\n"
        f"xm.save({{'args': argparse.Namespace(lr=0.1)}}, {str(tmp_path / 'a.pt')!r})\n"
        f"torch.save({{'cls': torch.nn.Linear}}, {str(tmp_path / 'b.pt')!r})\n"
        "try:\n"
        f"    xm.save({{'cls': torch.nn.Linear}}, {str(tmp_path / 'c.pt')!r})\n"
        "except TypeError as e:\n"
        "    print('TypeError', e)\n"
    )
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert "TypeError 'mappingproxy' object does not support item assignment" in out.stdout


DECORATED = src("""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)


def build():
    return Net().to(torch.device("cuda"))


DECORATOR
def save(model, epoch, path):
    torch.save({"model": model.state_dict(), "epoch": epoch}, path)


def save_plain(model, path):
    torch.save(model.state_dict(), path)
""")


def test_a_decorated_saving_function_keeps_every_save_finding():
    # A saved name read inside a decorated function once made XLA108 raise (the decorator's
    # node went where a call was expected), and every torch.save finding of the file was lost
    # (held-out 117: AnimeGANv2's `@torch.no_grad()` checkpoint method).
    for decorator in ("@torch.no_grad()", "@torch.no_grad", "@staticmethod"):
        code = DECORATED.replace("DECORATOR", decorator)
        saves = [f for f in findings(code, "XLA108") if "torch.save" in f.message]
        assert [f.span.start.line for f in saves] == [16, 20], decorator


def test_the_hydra_config_of_a_decorated_main_is_named():
    code = src("""
        import hydra
        import torch


        @hydra.main(config_path="conf", config_name="train")
        def main(cfg):
            model = torch.nn.Linear(2, 2).cuda()
            torch.save({"model": model.state_dict(), "cfg": cfg}, "ckpt.pth")
        """)
    (f,) = [f for f in findings(code, "XLA108") if "torch.save" in f.message]
    assert f.fix is not None and not f.fix.safe
    assert "the hydra config" in f.fix.review_reason
