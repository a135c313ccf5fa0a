from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.rules.base import Severity
from xla_lens.rules.registry import get_rule
from xla_lens.semantic.workspace import clear_cache

from tests.helpers import findings, fixed, src

CODE = """
import torch
from torch.backends import cudnn
from torch.utils.data import DataLoader

torch.backends.cudnn.benchmark = True
cudnn.deterministic = True  # reproducible
torch.cuda.manual_seed_all(args.seed)
loader = DataLoader(ds, batch_size=8, pin_memory=True, num_workers=2)
torch.cuda.set_device(local_rank)
for x in loader:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
"""


def test_cuda_only_calls_are_found():
    found = findings(CODE, "XLA403")
    assert [f.span.start.line for f in found] == [4, 5, 6, 7, 8, 10, 11, 12]
    assert all(f.fix is not None for f in found)


def test_modern_fix_removes_and_seeds_with_torch_xla():
    assert fixed(CODE, "XLA403") == src(
        """
        import torch
        from torch.backends import cudnn
        from torch.utils.data import DataLoader
        import torch_xla

        # reproducible
        torch_xla.manual_seed(args.seed)
        loader = DataLoader(ds, batch_size=8, num_workers=2)
        for x in loader:
            pass
        """
    )


def test_legacy_fix_seeds_with_set_rng_state():
    out = fixed(CODE, "XLA403", target="legacy")
    assert "xm.set_rng_state(args.seed)\n" in out
    assert "import torch_xla.core.xla_model as xm\n" in out
    assert "torch.cuda" not in out


def test_memory_and_device_queries_are_manual_per_target():
    code = """
    import torch
    print(torch.cuda.max_memory_allocated() / 2**30)
    n = torch.cuda.device_count()
    """
    mem, count = findings(code, "XLA403")
    assert mem.fix is None and "xm.get_memory_info(device)" in mem.manual
    assert "xr.world_size()" in count.manual
    (_, legacy_count) = findings(code, "XLA403", target="legacy")
    assert "xm.xrt_world_size()" in legacy_count.manual


def test_call_used_as_a_value_is_not_removed():
    code = """
    import torch
    ok = torch.cuda.synchronize() or True
    """
    (f,) = findings(code, "XLA403")
    assert f.fix is None and f.manual


def test_converted_and_guarded_code_reports_nothing():
    code = """
    import torch
    import torch_xla
    from torch.utils.data import DataLoader

    torch_xla.manual_seed(0)
    loader = DataLoader(ds, batch_size=8, pin_memory=False)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.backends.cudnn.benchmark = True
    use_gpu = torch.cuda.is_available()
    torch.manual_seed(0)
    """
    assert findings(code, "XLA403") == []


def test_hover():
    hover = get_rule("XLA403").hover
    assert "torch_xla.manual_seed" in hover["torch.cuda.manual_seed"]
    assert "torch.cuda.is_available" not in hover


def test_a_cuda_seed_under_an_availability_check_still_leaves_xla_unseeded():
    code = """
    import torch
    torch.manual_seed(1337)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(1337)
        torch.cuda.empty_cache()
    """
    (f,) = findings(code, "XLA403")
    assert "unseeded" in f.message and f.fix is None
    assert "torch_xla.manual_seed(1337)" in f.manual


def test_a_device_count_under_an_availability_check_is_skipped_on_xla():
    code = """
    import torch
    num_gpus = 1
    if torch.cuda.is_available():
        num_gpus = torch.cuda.device_count()
    """
    (f,) = findings(code, "XLA403")
    assert "skipped" in f.message and "xr.world_size()" in f.manual


def test_a_guard_with_only_cuda_no_op_calls_is_removed_whole():
    code = """
    import torch

    def generate(pipe):
        del pipe
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
            torch.cuda.ipc_collect()
        return 1
    """
    (f,) = findings(code, "XLA403")
    assert (f.span.start.line, f.span.end.line) == (4, 6)
    assert "does nothing" in f.message and f.fix is not None and f.fix.safe
    assert fixed(code, "XLA403") == src(
        """
        import torch

        def generate(pipe):
            del pipe
            return 1
        """
    )


def test_a_guard_that_is_the_only_statement_leaves_a_valid_block():
    code = """
    import torch
    for x in range(3):
        if use_gpu and torch.cuda.is_available():
            torch.cuda.empty_cache()
    """
    assert fixed(code, "XLA403") == src(
        """
        import torch
        for x in range(3):
            pass
        """
    )


@pytest.mark.parametrize(
    "block",
    [
        # other work in the block: left to the rules that own it
        "if torch.cuda.is_available():\n    torch.cuda.empty_cache()\n    model.half()\n",
        # an else branch runs on XLA
        "if torch.cuda.is_available():\n    torch.cuda.empty_cache()\nelse:\n    gc.collect()\n",
        # an elif: removing it needs the chain rewritten
        "if a:\n    f()\nelif torch.cuda.is_available():\n    torch.cuda.empty_cache()\n",
        # the test calls something else too (it might have effects)
        "if torch.cuda.is_available() and ready():\n    torch.cuda.empty_cache()\n",
        # the call is a value, not a statement
        "if torch.cuda.is_available():\n    done = torch.cuda.synchronize()\n",
    ],
)
def test_guarded_blocks_that_are_not_only_cuda_no_ops_are_left_alone(block: str):
    assert findings("import gc\nimport torch\n" + block, "XLA403") == []


GUARDED_EVENT_TIMING = """
import torch
def timed(model, x):
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    model(x)
    t1.record()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return t0.elapsed_time(t1)
"""


def test_a_guarded_synchronize_stays_for_the_cuda_run():
    # Dead on XLA, but on the CUDA host elapsed_time() raises "Both events must be completed"
    # without it: removing the block would change the CUDA run. Since the events are timers
    # (dd63f78) the skipped wait is explained at the guard, with advice and no fix.
    (f,) = findings(GUARDED_EVENT_TIMING, "XLA403")
    assert f.fix is None and "skipped" in f.message and f.span.start.line == 6
    assert fixed(GUARDED_EVENT_TIMING) == src(GUARDED_EVENT_TIMING)


@pytest.mark.parametrize(
    "body",
    [
        "torch.cuda.synchronize()",
        "torch.cuda.set_device(0)",
        "torch.cuda.reset_peak_memory_stats()",  # a later max_memory_allocated() reads it
        "torch.accelerator.synchronize()",
        "torch.cuda.empty_cache()\n    torch.cuda.synchronize()",
    ],
)
def test_a_guarded_block_with_a_call_the_cuda_run_may_need_is_left_alone(body: str):
    assert findings(f"import torch\nif torch.cuda.is_available():\n    {body}\n", "XLA403") == []


def test_a_negated_or_alternative_availability_test_is_no_guard():
    code = """
    import torch
    if not torch.cuda.is_available():
        torch.cuda.synchronize()
    if torch.cuda.is_available() or use_mps:
        torch.cuda.synchronize()
    """
    found = findings(code, "XLA403")
    assert [f.span.start.line for f in found] == [2, 4]
    assert all("synchronize() is CUDA-only" in f.message for f in found)


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


def test_a_workspace_helper_that_sets_up_cuda_is_reported_at_its_call(tmp_path: Path):
    clear_cache()
    root = tmp_path / "proj"
    _write(root / "setup.py", "")
    _write(
        root / "lib" / "dist.py",
        """
        import torch
        import torch.distributed as dist

        def init(rank):
            torch.cuda.manual_seed(0)
            torch.cuda.set_device(rank)
            dist.init_process_group("nccl")
            return torch.device("cuda", rank)

        def free():
            torch.cuda.empty_cache()
        """,
    )
    script = _write(
        root / "tools" / "train.py",
        """
        from lib.dist import init, free
        device = init(0)
        free()
        """,
    )
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    (f,) = [f for f in result.findings if f.code == "XLA403"]
    assert f.span.start.line == 1 and f.fix is None
    assert "init() is defined in lib/dist.py" in f.message
    assert "torch.cuda.set_device() (line 6)" in f.message
    assert 'init_process_group(backend="nccl") (line 7)' in f.message
    assert '"xla" backend' in f.manual and "lib/dist.py" in f.manual
    # Without the file on disk (an unsaved buffer) there is nothing to say.
    assert [f for f in analyze(script.read_text()).findings if f.code == "XLA403"] == []


def test_torch_accelerator_device_setup_raises_on_an_xla_host():
    # torch.accelerator knows no XLA: set_device_index/synchronize raise "Found no NVIDIA
    # driver" there; device_count() is 0 (a "need 2 GPUs" gate exits).
    code = """
    import torch
    def main(rank):
        torch.accelerator.set_device_index(rank)
        n = torch.accelerator.device_count()
        torch.accelerator.synchronize()
    """
    by_line = {f.span.start.line + 1: f for f in findings(code, "XLA403")}
    assert by_line[3].fix is not None and by_line[3].fix.safe
    assert by_line[4].fix is None and "xr.world_size()" in by_line[4].manual
    assert by_line[5].fix is not None
    out = fixed(code, "XLA403")
    assert "set_device_index" not in out and "synchronize" not in out


def test_a_device_count_that_decides_on_data_parallel_is_information():
    # held-out 27 (YOLOv4): both tests take the single-model branch on an XLA host, which is
    # right once DataParallel goes; the world-size advice would break the `.module` read.
    code = """
    import torch
    def evaluate(model, eval_model):
        if torch.cuda.device_count() > 1:
            eval_model.load_state_dict(model.module.state_dict())
        else:
            eval_model.load_state_dict(model.state_dict())
    model = Net()
    if torch.cuda.device_count() > 1:
        model = torch.nn.DataParallel(model)
    workers = 4 * torch.cuda.device_count()
    """
    found = {f.span.start.line: f for f in findings(code, "XLA403")}
    assert found[2].severity == Severity.INFORMATION and "(line 9)" in found[2].message
    assert found[7].severity == Severity.INFORMATION
    assert found[9].severity == Severity.WARNING and "xr.world_size()" in found[9].manual
