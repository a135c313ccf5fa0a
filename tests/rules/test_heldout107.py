"""Held-out 107 (tabular-dl-revisiting-models): a device picked by CUDA_VISIBLE_DEVICES is
a CUDA question, not the user's choice; an out-of-memory retry loop around one step is no
training loop (its function is the step, the caller's loop gets the sync); a package that
re-exports its step function (``from .deep import *``) still hands the step to the caller's
loop; a helper's CUDA environment report under ``if torch.cuda.is_available():`` is no
reason to convert the helper."""

from __future__ import annotations

from pathlib import Path

from xla_lens.engine.analysis import analyze

from tests.helpers import findings, fixed, src

VISIBLE_GPUS_PICKER = src("""
import os
import torch


def get_device() -> torch.device:
    return torch.device("cuda:0" if os.environ.get("CUDA_VISIBLE_DEVICES") else "cpu")


model = torch.nn.Linear(2, 2).to(get_device())
""")


def test_a_device_picked_by_cuda_visible_devices_becomes_the_xla_device():
    found = findings(VISIBLE_GPUS_PICKER, "XLA101")
    assert len(found) == 1
    assert "user's choice" not in found[0].message
    out = fixed(VISIBLE_GPUS_PICKER)
    assert "return torch_xla.device()" in out
    assert "CUDA_VISIBLE_DEVICES" not in out


def test_a_users_flag_still_keeps_its_choice():
    text = VISIBLE_GPUS_PICKER.replace('os.environ.get("CUDA_VISIBLE_DEVICES")', "USE_GPU")
    text = text.replace("import torch\n", "import torch\n\nUSE_GPU = bool(os.environ.get('X'))\n")
    assert "user's choice" in findings(text, "XLA101")[0].message


RETRY = src("""
import torch


def learn(model, optimizer, batch):
    optimizer.zero_grad()
    loss = model(batch).sum()
    loss.backward()
    optimizer.step()
    return loss


def learn_with_retry(model, optimizer, batch, chunk):
    while chunk != 0:
        try:
            return learn(model, optimizer, batch[:chunk]), chunk
        except RuntimeError as err:
            if "out of memory" not in str(err):
                raise
            chunk //= 2
    raise RuntimeError("Not enough memory even for batch_size=1")
""")


def test_an_out_of_memory_retry_loop_is_no_training_loop():
    assert findings(RETRY, "XLA107") == []
    assert "torch_xla.sync()" not in fixed(RETRY)


def test_a_loop_that_goes_round_after_the_step_still_is_one():
    text = RETRY.replace(
        "            return learn(model, optimizer, batch[:chunk]), chunk\n",
        "            learn(model, optimizer, batch[:chunk])\n",
    )
    assert [f.code for f in findings(text, "XLA107")] == ["XLA107"]


def test_a_try_else_break_after_the_step_leaves_the_loop_too():
    text = RETRY.replace(
        "            return learn(model, optimizer, batch[:chunk]), chunk\n",
        "            loss = learn(model, optimizer, batch[:chunk])\n",
    ).replace(
        "            chunk //= 2\n",
        "            chunk //= 2\n        else:\n            break\n",
    )
    assert findings(text, "XLA107") == []


CALLER = src("""
import torch
import lib

model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
chunk = 8
for batch in [torch.randn(8, 2) for _ in range(3)]:
    loss, chunk = lib.learn_with_retry(model, optimizer, batch, chunk)
""")


def _package(root: Path) -> Path:
    (root / "lib").mkdir()
    (root / "lib" / "__init__.py").write_text("from .deep import *\n")
    (root / "lib" / "deep.py").write_text(RETRY)
    script = root / "train.py"
    script.write_text(CALLER)
    return script


def test_the_callers_loop_of_a_re_exported_step_gets_the_sync(tmp_path):
    script = _package(tmp_path)
    found = analyze(CALLER, str(script)).findings
    assert [f.code for f in found if f.code == "XLA107"] == ["XLA107"]
    assert not [f for f in found if f.code == "XLA118" and "XLA107" in f.message]


ENV_REPORT = src("""
import torch


def load_config(path):
    environment = {}
    if torch.cuda.is_available():
        environment["nccl"] = torch.cuda.nccl.version()
    return path, environment
""")


def test_a_helpers_cuda_report_under_an_availability_test_is_no_reason_to_convert_it(tmp_path):
    (tmp_path / "util.py").write_text(ENV_REPORT)
    text = "import torch\nfrom util import load_config\n\nconfig = load_config('a.toml')\n"
    script = tmp_path / "train.py"
    script.write_text(text)
    assert [f for f in analyze(text, str(script)).findings if f.code == "XLA118"] == []
    (tmp_path / "util.py").write_text(
        ENV_REPORT.replace(
            "    if torch.cuda.is_available():\n        environment", "    environment"
        )
    )
    found = analyze(text, str(script)).findings
    assert [f.code for f in found if f.code == "XLA118"] == ["XLA118"]


EXPERIMENT = src("""
import torch
import torch.distributed as dist
from data_factory import data_provider


class Exp_Forecast:
    def __init__(self, args):
        self.args = args

    def _get_data(self, flag):
        return data_provider(self.args, flag)

    def world(self):
        return dist.get_world_size()
""")

FACTORY = src("""
from torch.utils.data import DataLoader, DistributedSampler


def data_provider(args, flag):
    data_set = list(range(8))
    sampler = DistributedSampler(data_set, shuffle=flag == "train")
    return data_set, DataLoader(data_set, batch_size=2, sampler=sampler)
""")

RUN = src("""
import torch.distributed as dist
from exp.exp_forecast import Exp_Forecast

dist.init_process_group(backend="nccl")
Exp = Exp_Forecast
exp = Exp(None)
""")


def _forecast_workspace(root: Path, run: str) -> tuple[Path, list]:
    (root / "exp").mkdir()
    script = root / "exp" / "exp_forecast.py"
    script.write_text(EXPERIMENT)
    (root / "exp" / "data_factory.py").write_text(FACTORY)
    (root / "run.py").write_text(run)
    return script, analyze(EXPERIMENT, str(script)).findings


def test_a_class_its_caller_runs_through_an_alias_under_a_process_group(tmp_path):
    """OpenLTM: ``Exp = Exp_Forecast`` in run.py, which builds the process group: the
    class's dist.get_world_size() and the helper's DistributedSampler answer right."""
    _, found = _forecast_workspace(tmp_path, RUN)
    assert [f.code for f in found if f.code in ("XLA202", "XLA118")] == []


def test_without_the_callers_process_group_both_are_reported(tmp_path):
    _, found = _forecast_workspace(
        tmp_path, RUN.replace('dist.init_process_group(backend="nccl")\n', "")
    )
    codes = [f.code for f in found]
    assert "XLA202" in codes
    assert "XLA118" in codes


MAIN_INFORMER = src("""
import argparse
import torch
from exp.exp_informer import Exp_Informer

parser = argparse.ArgumentParser()
parser.add_argument("--use_gpu", type=bool, default=True)
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()
args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False
exp = Exp_Informer(args)
""")

EXP_INFORMER = "from exp.exp_basic import Exp_Basic\n\n\nclass Exp_Informer(Exp_Basic):\n    pass\n"

EXP_BASIC = src("""
import torch


class Exp_Basic:
    def __init__(self, args):
        self.args = args
        self.device = self._acquire_device()

    def _acquire_device(self):
        if self.args.use_gpu:
            device = torch.device("cuda:{}".format(self.args.gpu))
        else:
            device = torch.device("cpu")
        return device
""")


def _informer(root: Path, basic: str) -> list:
    (root / "exp").mkdir()
    (root / "exp" / "exp_informer.py").write_text(EXP_INFORMER)
    (root / "exp" / "exp_basic.py").write_text(basic)
    script = root / "main_informer.py"
    script.write_text(MAIN_INFORMER)
    return analyze(MAIN_INFORMER, str(script)).findings


def test_a_cuda_flag_handed_to_a_module_that_picks_the_device_by_it(tmp_path):
    """Informer2020: the converted run would train on the CPU with nothing reported."""
    found = [f for f in _informer(tmp_path, EXP_BASIC) if f.code == "XLA101"]
    assert len(found) == 1
    assert found[0].span.start.line == 8  # 0-based: line 9
    assert "exp/exp_basic.py tests it to pick or move to the device (line 10)" in found[0].message
    assert found[0].fix is None


def test_a_handed_flag_nobody_picks_a_device_by_is_not_reported(tmp_path):
    basic = EXP_BASIC.replace('torch.device("cuda:{}".format(self.args.gpu))', "'big'")
    assert [f for f in _informer(tmp_path, basic) if f.code == "XLA101"] == []


TPU_SCRIPT = src("""
import argparse
import torch


def train_single_device():
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.metrics as met
    from torch.utils.data import DataLoader

    device = xm.xla_device()
    model = torch.nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader([(torch.randn(4), torch.randn(1)) for _ in range(8)], batch_size=2)
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(data), target)
        loss.backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()
    print(met.short_metrics_report())


def _mp_fn(index):
    print("replica", index)


def train_multi_device():
    import torch_xla.distributed.xla_multiprocessing as xmp

    xmp.spawn(_mp_fn, args=())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--single", action="store_true")
    args = parser.parse_args()
    if args.single:
        train_single_device()
    else:
        train_multi_device()
""")


def test_a_hand_written_xla_loop_that_syncs_itself_is_left_its_loader():
    assert findings(TPU_SCRIPT, "XLA106") == []
    # The same loop with only what xla-lens's own fixes write (a CUDA script converted
    # halfway) still gets the loader: those calls are no evidence of an author's choice.
    converted = TPU_SCRIPT.replace("    print(met.short_metrics_report())\n", "").replace(
        "    import torch_xla.debug.metrics as met\n", ""
    )
    assert [f.code for f in findings(converted, "XLA106")] == ["XLA106"]


def test_a_function_run_instead_of_the_launch_is_no_launchers_parent():
    found = [f for f in findings(TPU_SCRIPT, "XLA501") if "xla_device" in f.message]
    assert found
    assert all("launcher's parent" not in f.message for f in found)


def test_a_function_run_before_the_launch_still_is():
    text = TPU_SCRIPT.replace(
        "    if args.single:\n        train_single_device()\n    else:\n        train_multi_device()\n",
        "    train_single_device()\n    train_multi_device()\n",
    )
    found = [f for f in findings(text, "XLA501") if "xla_device" in f.message]
    assert any("launcher's parent" in f.message for f in found)


def test_a_handed_flag_that_guards_a_move_by_rank_is_reported_too(tmp_path):
    """Point-MAE (held-out 110): ``if args.use_gpu: base_model.to(args.local_rank)``."""
    basic = EXP_BASIC.replace(
        'device = torch.device("cuda:{}".format(self.args.gpu))',
        "device = self.model.to(self.args.gpu)",
    )
    found = [f for f in _informer(tmp_path, basic) if f.code == "XLA101"]
    assert len(found) == 1 and "tests it to pick or move to the device" in found[0].message
