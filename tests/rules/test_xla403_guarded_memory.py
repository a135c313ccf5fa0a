"""A CUDA memory query under ``if torch.cuda.is_available():`` (held-out 7, M15): the block
never runs on an XLA host, so nothing fails, but the memory figure the script logs there is
silently gone. Reported once per check, at its test, with advice and no fix (the CUDA run
still needs the CUDA query)."""

from tests.helpers import findings, fixed, src

GUARDED_LOG = """
import torch


def log_line(step, loss):
    if torch.cuda.is_available():
        peak = torch.cuda.max_memory_allocated() / 2**20
        used = torch.cuda.memory_allocated() / 2**20
        print(f"step {step} loss {loss:.3f} peak {peak:.0f}MB used {used:.0f}MB")
    else:
        print(f"step {step} loss {loss:.3f}")
"""


def test_a_guarded_memory_query_is_reported_once_at_the_check_with_advice():
    (f,) = findings(GUARDED_LOG, "XLA403")
    assert f.span.start.line == 4
    assert "torch.cuda.max_memory_allocated()" in f.message and "skipped" in f.message
    assert f.fix is None and "xm.get_memory_info(device)" in f.manual
    # The CUDA run keeps its figure: nothing is rewritten.
    assert fixed(GUARDED_LOG, "XLA403", unsafe=True) == src(GUARDED_LOG)


def test_the_unguarded_query_keeps_its_own_finding():
    code = """
    import torch
    print("max mem", torch.cuda.max_memory_allocated() / 2**20)
    """
    (f,) = findings(code, "XLA403")
    assert f.span.start.line == 1 and "reads nothing useful" in f.message


def test_a_guard_without_a_memory_query_stays_quiet():
    code = """
    import torch
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
    """
    assert findings(code, "XLA403") == []


def test_memory_summary_is_said_to_raise_without_cuda():
    # held-out 16 (pytorch-cifar100): measured on torch 2.9 without CUDA, KeyError.
    code = """
    import torch
    print(torch.cuda.memory_summary(), end="")
    """
    (f,) = findings(code, "XLA403")
    assert "raises (KeyError" in f.message and "nothing useful" not in f.message


def test_the_cuda_side_of_a_one_sided_xla_mode_test_is_left_alone():
    # CLIPA's train.py (held-out 37, already XLA): ``if use_xla(): xm.mark_step()`` makes
    # ``use_xla()`` the script's mode switch, so ``if not use_xla(): torch.cuda.empty_cache()``
    # is its CUDA side: removing the call there would only change the CUDA mode.
    from tests.helpers import findings

    code = """
    import torch
    import torch_xla.core.xla_model as xm
    from .device_env import use_xla


    def train(model, loader, opt):
        for x in loader:
            model(x).sum().backward()
            opt.step()
            if use_xla():
                xm.mark_step()
        if not use_xla():
            torch.cuda.empty_cache()
    """
    assert findings(code, "XLA403") == []
    # A condition on data or a step count is no mode switch.
    other = code.replace("if use_xla():", "if step % 10 == 0:").replace(
        "if not use_xla():", "if not step % 10 == 0:"
    )
    assert [f.code for f in findings(other, "XLA403")] == ["XLA403"]
