"""Safe fixes that count on another rule's fix count on it as the engine applies it.

XLA107 leaves a loop's sync to XLA106's MpDeviceLoader wrap, and XLA401's step closure needs
that wrap or XLA107's sync after it. The engine drops a fix the user silenced and holds back,
for review, a fix that touches the XLA runtime in the launcher's parent; a rule that read the
other rule's raw output wrote a closure nothing ran, or left a loop with no sync and no finding.
``bench/fix_dependencies.py`` applies the safe fixes the way Convert does and checks what they
count on is in the result; every fixture and sample must pass it.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.engine.config import Settings

from ..helpers import fixed

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import fix_dependencies  # noqa: E402

FIXTURE = ROOT / "tests" / "conversions" / "fixtures" / "parent_loop_sampler.py"

SILENCED_WRAP = textwrap.dedent(
    """\
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler


    def main():
        device = torch.device("cuda")
        dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
        model = nn.Linear(4, 1).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:{comment}
            x, y = x.to(device), y.to(device)
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    if __name__ == "__main__":
        main()
    """
)


def _codes(source: str, settings: Settings | None = None) -> dict[str, bool | None]:
    return {
        f.code: (f.fix.safe if f.fix else None) for f in analyze(source, settings=settings).findings
    }


def test_a_wrap_the_engine_holds_back_in_the_parent_leaves_the_sync_to_xla107():
    source = FIXTURE.read_text()
    found = _codes(source)
    assert found["XLA106"] is False  # held back: the wrap calls torch_xla.device() in the parent
    assert found["XLA107"] is True
    out = fixed(source)
    assert "MpDeviceLoader(" not in out
    # The closure XLA401 writes runs at the sync XLA107 adds after it (it never ran before).
    closure = out.index("xm.add_step_closure(")
    assert out.index("torch_xla.sync()", closure) > closure
    assert fix_dependencies.check_text(source, str(FIXTURE)) == []


@pytest.mark.parametrize("how", ["comment", "settings"])
def test_a_silenced_wrap_does_not_silence_xla107(how: str):
    if how == "comment":
        source = SILENCED_WRAP.format(comment="  # xla-lens: ignore[XLA106]")
        settings = None
    else:
        source = SILENCED_WRAP.format(comment="")
        settings = Settings(ignore=("XLA106",))
        assert _codes(source).get("XLA107") is None  # the wrap syncs: XLA107 stays quiet
    found = _codes(source, settings)
    assert "XLA106" not in found
    assert found["XLA107"] is True


def test_fixtures_and_samples_keep_what_their_safe_fixes_count_on():
    paths = sorted((ROOT / "tests" / "conversions" / "fixtures").glob("*.py"))
    paths += sorted((ROOT / "samples").glob("*.py"))
    hits = [
        str(hit)
        for path in paths
        for hit in fix_dependencies.check_text(path.read_text(encoding="utf-8"), path.name)
    ]
    assert hits == []
