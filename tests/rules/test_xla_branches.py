"""Code that never runs on XLA gets no conversion finding (semantic/xla_branches.py and
rules/parts/xla_branch_filter.py): the CUDA side of a script's own XLA/CUDA switch, and
CUDA-only calls under a guard that is False on an XLA host. Placements under such a guard and
flags the user sets stay reported."""

from __future__ import annotations

from pathlib import Path

from xla_lens.engine import analyze
from xla_lens.rules.base import Severity
from xla_lens.semantic.workspace import clear_cache

from tests.helpers import findings, fixed, src

DUAL_AUTOCAST = """
import torch, torch_xla.core.xla_model as xm
def train(model, loader, opt, use_xla, amp):
    device = xm.xla_device() if use_xla else torch.device("cuda")
    model.to(device)
    for x in loader:
        with torch.cuda.amp.autocast(enabled=amp):
            loss = model(x.to(device)).sum()
        loss.backward(); opt.step(); xm.mark_step()
"""


def test_cuda_side_of_a_conditional_switch_is_left_alone():
    assert findings(DUAL_AUTOCAST, "XLA101") == []
    assert 'torch.device("cuda")' in fixed(DUAL_AUTOCAST)


def test_shared_autocast_in_a_dual_mode_script_waits_for_review():
    (autocast,) = findings(DUAL_AUTOCAST, "XLA102")
    assert autocast.fix is not None and not autocast.fix.safe
    assert "switches between XLA and CUDA (line 3)" in autocast.fix.review_reason
    assert "torch.cuda.amp.autocast(enabled=amp)" in fixed(DUAL_AUTOCAST)


def test_shared_amp_an_option_turns_on_is_information_about_the_xla_mode():
    # held-out 34 (moco_v3_tpu): CUDA AMP behind the user's option, off by default.
    (autocast,) = findings(DUAL_AUTOCAST, "XLA102")
    assert autocast.severity == Severity.INFORMATION
    assert "in the XLA mode of the script's own switch, line 3, only when `amp`" in (
        autocast.message
    )
    always = DUAL_AUTOCAST.replace("autocast(enabled=amp)", "autocast()")
    (autocast,) = findings(always, "XLA102")
    assert autocast.severity == Severity.WARNING and "only when" not in autocast.message


DUAL_SCALER = """
import torch, torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
def train(model, loader, opt, cfg):
    if cfg.device == "xla":
        device = xm.xla_device()
        loader = pl.MpDeviceLoader(loader, device)
    else:
        device = torch.device("cuda")
    model.to(device)
    scaler = None
    if cfg.use_amp:
        scaler = torch.cuda.amp.GradScaler()
    batches = torch.utils.data.DataLoader(loader, pin_memory=True)
    for x in batches:
        loss = model(x).sum()
        loss.backward(); opt.step()
"""


def test_dual_mode_scaler_under_an_option_and_its_pinned_loader():
    (scaler,) = findings(DUAL_SCALER, "XLA103")
    assert scaler.severity == Severity.INFORMATION and "`cfg.use_amp`" in scaler.message
    # Pinning serves the CUDA mode; on XLA the loader has nothing to pin for.
    assert not [f for f in findings(DUAL_SCALER, "XLA403") if "pin_memory" in f.message]
    xla_only = """
    import torch, torch_xla.core.xla_model as xm
    def train(model, ds, opt):
        model.to(xm.xla_device())
        for x in torch.utils.data.DataLoader(ds, pin_memory=True):
            model(x).sum().backward(); opt.step(); xm.mark_step()
    """
    assert [f for f in findings(xla_only, "XLA403") if "pin_memory" in f.message]


def test_shared_optimizer_step_in_a_dual_mode_script_waits_for_review():
    assert all(not f.fix.safe for f in findings(DUAL_AUTOCAST, "XLA105") if f.fix)


EARLY_RETURN = """
import torch, torch_xla.core.xla_model as xm
from torch.nn.parallel import DistributedDataParallel as DDP
def setup(model, use_xla, gpu):
    if use_xla:
        return model.to(xm.xla_device())
    return DDP(model.to(torch.device(f"cuda:{gpu}")), device_ids=[gpu])
"""


def test_code_after_an_early_xla_return_is_left_alone():
    assert [f.code for f in findings(EARLY_RETURN) if f.code != "XLA501"] == []
    assert "cuda:{gpu}" in fixed(EARLY_RETURN)


def test_an_xla_mode_that_returns_from_a_try_leaves_the_rest_to_cuda():
    # Held-out 71's Trainium tutorial: `if requested == "xla": try: import ...; return
    # xm.xla_device(), "xla" except ImportError: return cpu` then the CUDA branch.
    code = """
    import torch

    def resolve(requested):
        if requested == "xla":
            try:
                import torch_xla.core.xla_model as xm
                return xm.xla_device(), "xla"
            except ImportError:
                return torch.device("cpu"), "cpu"
        if requested == "cuda" and torch.cuda.is_available():
            return torch.device("cuda"), "cuda"
        return torch.device("cpu"), "cpu"

    model = torch.nn.Linear(2, 2).to(resolve("xla")[0])
    """
    assert findings(code, "XLA101") == []
    # A try whose handler falls through does not always leave: the rest may run in XLA mode.
    through = code.replace(
        '                return torch.device("cpu"), "cpu"\n        if',
        "                pass\n        if",
    )
    assert through != code and findings(through, "XLA101") != []


SAME_TEST_ELSEWHERE = """
import torch, torch_xla.core.xla_model as xm
def main(args):
    if args.tpu:
        device = xm.xla_device()
    else:
        device = torch.device("cuda")
    model = torch.nn.Linear(2, 2).to(device)
    if not args.tpu:
        torch.cuda.set_device(0)
        torch.backends.cudnn.benchmark = True
"""


def test_other_ifs_on_the_same_test_split_the_same_way():
    assert findings(SAME_TEST_ELSEWHERE, "XLA101") == []
    assert findings(SAME_TEST_ELSEWHERE, "XLA403") == []


GUARDED_TIMING = """
import torch
def train(model, loader, opt, device):
    use_cuda = device.type == "cuda"
    if use_cuda:
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
    for x in loader:
        opt.zero_grad(); model(x.to(device)).sum().backward(); opt.step()
    if use_cuda:
        t1.record(); torch.cuda.synchronize(); print(t0.elapsed_time(t1))
    if torch.cuda.is_available():
        print(torch.cuda.max_memory_allocated(), torch.cuda.get_device_capability())
    if torch.cuda.device_count() > 0:
        torch.cuda.synchronize()
"""


def test_cuda_only_calls_under_a_guard_false_on_xla_are_not_reported():
    # The count in the last guard's own test runs on XLA (0 there): it stays reported. The
    # memory figure printed under `if torch.cuda.is_available():` goes missing on XLA: advice
    # at that check (line 10, no fix, the CUDA run keeps its print).
    found = findings(GUARDED_TIMING, "XLA403")
    assert [f.span.start.line for f in found] == [10, 12]
    assert found[0].fix is None and "max_memory_allocated" in found[0].message
    assert findings(GUARDED_TIMING, "XLA405") == []
    assert "torch.cuda.synchronize(); print" in fixed(GUARDED_TIMING)


USER_FLAG_AND_PLACEMENT = """
import torch
def train(model, loader, args):
    if torch.cuda.is_available():
        model.cuda()
        torch.cuda.manual_seed(args.seed)
    if args.cuda:
        torch.cuda.synchronize()
    for x in loader:
        model(x).sum().backward()
"""


def test_placements_seeds_and_user_flags_stay_reported():
    assert [f.span.start.line for f in findings(USER_FLAG_AND_PLACEMENT, "XLA101")] == [3]
    lines = [f.span.start.line for f in findings(USER_FLAG_AND_PLACEMENT, "XLA403")]
    assert 4 in lines and 6 in lines


CUDA_ONLY_SCRIPT = """
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 2).to(device)
"""


def test_a_cuda_or_cpu_picker_is_no_xla_switch():
    assert findings(CUDA_ONLY_SCRIPT, "XLA101")


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


HELPERS = """
import torch
import torch.distributed as dist
import torch_xla.runtime as xr

def init(cfg, rank):
    if cfg.use_xla:
        cfg.world_size = xr.world_size()
        return
    dist.init_process_group("nccl")
    torch.cuda.set_device(rank)

def init_cuda(rank):
    dist.init_process_group("nccl")
    torch.cuda.set_device(rank)
"""


def test_a_helper_that_returns_early_for_xla_is_converted_already(tmp_path: Path):
    clear_cache()
    root = tmp_path / "proj"
    _write(root / "setup.py", "")
    _write(root / "lib" / "dist.py", HELPERS)
    script = _write(
        root / "train.py",
        """
        from lib.dist import init, init_cuda
        init(cfg, 0)
        init_cuda(0)
        """,
    )
    found = [f for f in analyze(script.read_text(), str(script)).findings if f.code == "XLA403"]
    assert [f.span.start.line for f in found] == [2]
    assert "init_cuda() is defined in lib/dist.py" in found[0].message


PICKER_FLAG = """
import torch
use_cuda = torch.cuda.is_available()
device = torch.device("cuda" if use_cuda else "cpu")
model = torch.nn.Linear(2, 2)
if use_cuda:
    model = model.to(device)
for x in loader:
    model(x.to(device)).sum().backward()
if use_cuda:
    torch.cuda.synchronize()
"""


def test_a_flag_the_picker_reads_is_no_guard_false_on_xla():
    # The picker fix rewrites the flag (use_cuda = True): the guarded block then runs on XLA,
    # so the CUDA-only call there must still go.
    (sync,) = findings(PICKER_FLAG, "XLA403")
    assert sync.span.start.line == 9 and sync.fix is not None and sync.fix.safe
    out = fixed(PICKER_FLAG)
    assert "use_cuda = True" in out and "torch.cuda.synchronize()" not in out


def test_a_cuda_branch_placement_does_not_hold_back_a_fix_that_depends_on_the_device():
    # XLA101's finding in the CUDA side of the script's own switch is left alone by the
    # engine; a fix that goes with the device (XLA102 via device_held) must see the same.
    code = """
    import torch
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.parallel_loader as pl


    def is_xla():
        return True


    def train(cfg, model, loader, opt):
        if is_xla():
            device = xm.xla_device()
            loader = pl.MpDeviceLoader(loader, device)
            model = model.to(device)
        else:
            device = torch.device(f"cuda:{cfg.device_id}")
            model = model.to(device)
        for x in loader:
            opt.zero_grad()
            with torch.cuda.amp.autocast():
                loss = model(x).sum()
            loss.backward()
            opt.step()
    """
    (f,) = [f for f in findings(code, "XLA102") if f.fix is not None]
    assert "XLA101's change" not in f.fix.review_reason
    assert "switches between XLA and CUDA" in f.fix.review_reason


def test_a_tpus_flag_guarding_the_torch_xla_imports_is_the_scripts_xla_mode():
    # Held-out 64's Bert_Sentiment: `if config.TPUs: import torch_xla.core.xla_model as xm`,
    # CUDA by default. Safe fixes wrote `xm.master_print` into code both modes run and
    # `xm.save` into `if not config.TPUs:`: NameError in the default mode (probe repro).
    code = """
    import torch
    import config
    if config.TPUs:
        import torch_xla.core.xla_model as xm

    def run(model):
        if config.TPUs:
            device = xm.xla_device()
        else:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        print(f"score = {1}")
        if not config.TPUs:
            torch.save(model.state_dict(), "m.pt")
        else:
            xm.save(model.state_dict(), "m.pt")
    """
    out = fixed(code, unsafe=False)
    assert 'torch.save(model.state_dict(), "m.pt")' in out
    assert "xm.master_print" not in out
    assert "device = torch_xla.device()" in out  # the XLA side's own API still updated


def test_a_shared_scaler_already_for_review_also_says_it_serves_both_modes():
    # held-out 65's SimCLR control: ``scaler = None`` then ``scaler = GradScaler()`` under an
    # option, in code both modes run; the keep-scaling rewrite waits for review for its own
    # reason and must also say that it changes the CUDA mode.
    code = DUAL_AUTOCAST.replace(
        "    model.to(device)\n",
        "    model.to(device)\n    scaler = None\n    if amp:\n"
        "        scaler = torch.cuda.amp.GradScaler()\n",
    ).replace("loss.backward(); opt.step()", "scaler.scale(loss).backward(); scaler.step(opt)")
    (scaler,) = findings(code, "XLA103")
    assert scaler.fix is not None and not scaler.fix.safe
    reason = scaler.fix.review_reason
    assert "also, the script switches between XLA and CUDA (line 3)" in reason
    assert reason.index("also,") > 0  # after the finding's own reason


TPU_OR_FP16 = """
import torch
from torch.cuda import amp
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


class Engine:
    def __init__(self, model, optimizer, device, use_tpu=False, fp16=False):
        self.model, self.optimizer, self.device = model, optimizer, device
        self.use_tpu, self.fp16 = use_tpu, fp16
        if self.fp16 and use_tpu:
            raise Exception("fp16 is not available on TPUs")
        if self.fp16:
            self.scaler = amp.GradScaler()

    def train(self, loader):
        if self.use_tpu:
            loader = pl.ParallelLoader(loader, [self.device]).per_device_loader(self.device)
        for x in loader:
            if self.fp16:
                with amp.autocast():
                    loss = self.model(x)
            else:
                loss = self.model(x)
            loss.backward()
            if self.use_tpu:
                xm.optimizer_step(self.optimizer)
                reduced = xm.mesh_reduce("loss", loss, lambda v: sum(v) / len(v))
                print(reduced)
            else:
                self.optimizer.step()
                print(loss.item())
"""


def test_an_option_refused_in_xla_mode_is_the_cuda_side():
    # wtfml's engine (held-out 158's control): `if self.fp16 and use_tpu: raise` makes every
    # `if self.fp16:` block code that never runs in the script's XLA mode, and the `else` of
    # `if self.use_tpu:` its CUDA mode: no AMP finding, no host-read finding there.
    assert findings(TPU_OR_FP16) == []


def test_without_the_refusal_the_amp_blocks_are_reported():
    code = TPU_OR_FP16.replace(
        '        if self.fp16 and use_tpu:\n            raise Exception("fp16 is not available on TPUs")\n',
        "",
    )
    codes = {f.code for f in findings(code)}
    assert {"XLA102", "XLA103"} <= codes
