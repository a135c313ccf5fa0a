"""XLA204 on the DeiT / MAE main.py shape (held-out probe): the launcher sets no torchrun
environment, so the DDP the script would switch on never happens. Accepting the reviewed
launch rewrite runs one separate training per device, each writing the checkpoint."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.conversions.harness import FIXTURES, _env, convert, run_script

FIXTURE = FIXTURES / "launch_env_gated_ddp.py"
SIBLING = FIXTURES / "launch_env_gated_utils.py"

pytestmark = pytest.mark.xla


def test_the_launch_is_review_and_safe_fixes_leave_the_entry_call():
    result = analyze(FIXTURE.read_text(), str(FIXTURE))
    (f,) = [x for x in result.findings if x.code == "XLA204"]
    assert not f.fix.safe
    assert "the replicas would train independently" in f.fix.review_reason
    assert "set by init_distributed_mode() (another module)" in f.fix.review_reason
    assert "torchrun's environment" in f.fix.review_reason
    source, _, _ = convert(FIXTURE.read_text(), str(FIXTURE))
    assert "torch_xla.launch(" not in source and "    main(args)\n" in source


def test_accepting_the_launch_runs_independent_trainings():
    source, _, _ = convert(FIXTURE.read_text(), str(FIXTURE), accept_review=("XLA204",))
    assert "torch_xla.launch(_mp_fn, args=(args,))" in source
    with tempfile.TemporaryDirectory(prefix="xla-lens-proof-") as tmp:
        script = Path(tmp) / FIXTURE.name
        script.write_text(source)
        shutil.copy(SIBLING, Path(tmp) / SIBLING.name)
        run = run_script(script, env=_env(2, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="2"))
        checkpoints = (Path(tmp) / "checkpoint.log").read_text().splitlines()
    assert run.returncode == 0, run.stderr[-2000:]
    # Two devices: two whole single-process trainings, no process group, two checkpoint writes.
    assert run.stdout.count("Not using distributed mode") == 2
    # The script's own loss prints became xm.master_print (XLA113): one replica reports.
    assert len(run.losses) == 2
    assert "xm.master_print(" in source
    assert checkpoints == ["checkpoint", "checkpoint"]
