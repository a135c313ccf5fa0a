"""XLA203 under the XLA launcher with an xla:// process group in each replica, proven by
running: where the runtime runs several replicas as threads of one process (PJRT CPU with
CPU_NUM_DEVICES=2 here; TPU v2/v3) they share torch.distributed's default group, so a sampler
left to its defaults gives every replica the same rank and the same shard; with XLA203's fix
each replica reads its own (xr.global_ordinal() is per thread)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.conversions.harness import FIXTURES, _env, convert, run_script

FIXTURE = FIXTURES / "xla_group_sampler_launch.py"
SAMPLER_LINE = re.compile(
    r"^xla-lens-sampler: ordinal=(\d+) rank=(\d+) replicas=(\d+) first=(\[.*?\])", re.M
)


def _samplers(script: Path) -> list[tuple[str, ...]]:
    run = run_script(script, env=_env(None, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="2"), timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    return sorted(SAMPLER_LINE.findall(run.stdout))


def test_the_finding_says_threaded_replicas_share_the_group():
    result = analyze(FIXTURE.read_text(), str(FIXTURE), target="modern")
    (f,) = [x for x in result.findings if x.code == "XLA203"]
    assert "threads of one process" in f.message and f.fix is not None and f.fix.safe


@pytest.mark.xla
def test_the_fix_gives_each_threaded_replica_its_own_shard():
    original = _samplers(FIXTURE)
    # Both replicas read one shared group: one rank, one shard for both.
    assert [o for o, *_ in original] == ["0", "1"]
    assert len({(rank, first) for _, rank, _, first in original}) == 1
    source, applied, _ = convert(FIXTURE.read_text(), str(FIXTURE), accept_review=())
    assert any("XLA203" in a for a in applied), applied
    with tempfile.TemporaryDirectory(prefix="xla-lens-proof-") as tmp:
        script = Path(tmp) / FIXTURE.name
        script.write_text(source)
        fixed = _samplers(script)
    assert [(o, r, n) for o, r, n, _ in fixed] == [("0", "0", "2"), ("1", "1", "2")]
    assert fixed[0][3] != fixed[1][3]
