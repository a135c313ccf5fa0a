"""Device selection and launch idioms, proven by running (protocol: README.md).

Each fixture is converted with the safe fixes only (as Convert does), run under torch_xla
PJRT CPU and compared with the original's CPU run. Traps prove the opposite: the safe
conversion leaves the risky rewrite out (offered for review) and the script still means
what it meant.
"""

from __future__ import annotations

import pytest
from xla_lens.engine import analyze, fix_source

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla


def _source(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("fixture", "shim"),
    [
        ("device_accel_picker.py", False),
        ("device_argparse_default.py", True),
        ("device_option_behind_availability.py", False),
        ("device_trainer_attribute.py", False),
        ("device_int_index.py", True),
        ("device_examples_flags.py", False),
        ("device_cpu_first_flag.py", True),
        ("device_dataparallel_inputs.py", False),
    ],
)
def test_device_idiom_converts_and_trains_on_xla(fixture, shim):
    result = prove(FIXTURES / fixture, steps=3, cuda_shim=shim)
    assert_proven(result)
    assert "XLA101" in result.applied
    assert "XLA101" not in result.remaining
    assert "torch.cuda.is_available" not in result.converted_source
    assert "current_accelerator()" not in result.converted_source
    assert "accelerator.is_available" not in result.converted_source


def test_accelerator_picker_keeps_the_users_flag():
    out = fix_source(_source("device_accel_picker.py"), "f.py").source
    assert "use_accel = not args.no_accel\n" in out
    assert "device = torch_xla.device()" in out


def test_rank_sentinel_and_main_args_launch_under_torch_xla():
    result = prove(FIXTURES / "device_rank_sentinel.py", steps=3)
    assert_proven(result, expect_mp_fn=True)
    src = result.converted_source
    # "launched distributed?" keeps its meaning: world size above 1, not "an ordinal exists".
    assert "ddp = xr.world_size() > 1" in src
    assert "def _mp_fn(index, arg0):\n    main(arg0)" in src
    assert "torch_xla.launch(_mp_fn, args=(parser.parse_args(),))" in src


def test_string_trap_is_left_for_review_and_keeps_its_meaning():
    source = _source("device_string_trap.py")
    (finding,) = [f for f in analyze(source).findings if f.code == "XLA101"]
    assert finding.fix is not None and not finding.fix.safe
    assert "startswith" in finding.fix.review_reason
    result = prove(FIXTURES / "device_string_trap.py", steps=3)
    assert "XLA101" not in result.applied
    assert "XLA101" in result.remaining
    assert 'if torch.cuda.is_available():\n        device = "cuda"' in result.converted_source
    conv, orig = result.converted, result.original
    assert conv.returncode == 0 and orig is not None and orig.returncode == 0, result.describe()
    assert conv.losses == pytest.approx(orig.losses, rel=0.02), result.describe()


def test_already_xla_control_gets_no_device_or_launch_findings():
    from .harness import CONTROLS

    source = (CONTROLS / "xla_ddp_launch.py").read_text()
    mine = {"XLA101", "XLA202", "XLA203", "XLA204"}
    assert [f for f in analyze(source).findings if f.code in mine] == []


def test_legacy_target_trains_on_xla_too():
    result = prove(FIXTURES / "device_trainer_attribute.py", target="legacy", steps=3)
    assert_proven(result)
    assert "self.device = xm.xla_device()" in result.converted_source
