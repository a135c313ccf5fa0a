"""What `check` says of each fix must match what `fix` does. `fix` runs in rounds: a fix that
needs review on its own can become safe once another round's safe fix is in (XLA403 removes
``torch.cuda.set_device(device)``, then XLA101 may change ``device``), and `fix` applies it.
`check` then says "applied by `fix` together with XLA403's fix at line N", not "review: not
applied by `fix`"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from xla_lens.cli.output import Reported, format_text
from xla_lens.engine import Settings, analyze, fix_source
from xla_lens.engine.fix_plan import applied_later

from tests.helpers import src

# A CUDA index that is both the model's device and torch.cuda.set_device's argument.
INDEX_DEVICE = """
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("nccl")
    device = dist.get_rank() % torch.cuda.device_count()
    torch.cuda.set_device(device)
    net = torch.nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        net(torch.randn(8, 4, device=device)).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def _check(code: str) -> tuple[list, dict]:
    analysis = analyze(code, "t.py", Settings(), "modern")
    return analysis.findings, applied_later(code, "t.py", Settings(), "modern", analysis.findings)


def test_a_fix_applied_in_a_later_round_is_named_with_the_fix_it_waits_for():
    code = src(INDEX_DEVICE)
    found, later = _check(code)
    device = [i for i, f in enumerate(found) if f.code == "XLA101"]
    assert device and all(not found[i].fix.safe for i in device)
    # set_device is line 8; XLA403's safe fix removes it, and then XLA101's fix is safe.
    assert [later[i].after for i in device] == [(("XLA403", 8),)] * len(device)
    text = format_text([Reported(Path("t.py"), f, later.get(i)) for i, f in enumerate(found)])
    assert "applied by `fix` together with XLA403's fix at line 8" in text
    assert text.count("review: not applied by `fix`") == sum(
        1 for i, f in enumerate(found) if f.fix and not f.fix.safe and i not in later
    )
    # ... and `fix` does apply it.
    out = fix_source(code, "t.py", Settings(), "modern")
    assert "device = torch_xla.device()" in out.source
    assert "torch.cuda.set_device" not in out.source


def test_every_fix_check_calls_review_is_left_by_fix():
    # With XLA403's fix turned off set_device stays, and so does the CUDA device index.
    code = src(INDEX_DEVICE).replace(
        "torch.cuda.set_device(device)", "torch.cuda.set_device(device)  # xla-lens: ignore[XLA403]"
    )
    found, later = _check(code)
    assert later == {}
    text = format_text([Reported(Path("t.py"), f, later.get(i)) for i, f in enumerate(found)])
    assert "together with" not in text
    assert "review: not applied by `fix`" in text
    out = fix_source(code, "t.py", Settings(), "modern")
    assert "% torch.cuda.device_count()" in out.source


def _cli_check(folder: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xla_lens", "check", "train.py", "--target", "modern", *extra],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def test_the_cli_check_with_its_fix_plan_says_what_fix_applies(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(src(INDEX_DEVICE))
    run = _cli_check(tmp_path, "--fix-plan")
    assert "XLA403's fix at line 8" in run.stdout, run.stdout
    found, later = _check(src(INDEX_DEVICE))
    fixable = sum(1 for f in found if f.fix is not None and f.fix.safe) + len(later)
    assert f"({fixable} fixable with `xla-lens fix`)" in run.stderr


def test_the_cli_check_without_the_plan_claims_nothing_fix_may_contradict(tmp_path: Path):
    # The rounds cost several analyses and libcst rewrites per file, so plain `check` skips
    # them; it must then not say "not applied by `fix`" of a fix that `fix` does apply.
    script = tmp_path / "train.py"
    script.write_text(src(INDEX_DEVICE))
    run = _cli_check(tmp_path)
    assert "together with" not in run.stdout
    assert "(review: not applied by `fix`)" not in run.stdout
    found, later = _check(src(INDEX_DEVICE))
    review = [f for f in found if f.fix is not None and not f.fix.safe]
    assert later and review
    assert run.stdout.count("not applied by `fix` unless its other fixes make it safe") == len(
        review
    )
    safe = sum(1 for f in found if f.fix is not None and f.fix.safe)
    assert (
        f"({safe} fixable with `xla-lens fix`; {len(review)} more need review on their own: "
        "`check --fix-plan` names those `fix` applies once the others are in)"
    ) in run.stderr
    as_json = _cli_check(tmp_path, "--format", "json")
    records = [r["fix"] for r in json.loads(as_json.stdout) if r["fix"]]
    assert all(
        ("applied_by_fix_with" in r and r["applied_by_fix_with"] is None)
        == (r["applicability"] == "unsafe")
        for r in records
    )
    planned = json.loads(_cli_check(tmp_path, "--format", "json", "--fix-plan").stdout)
    assert any(r["fix"] and r["fix"].get("applied_by_fix_with") for r in planned)


# XLA103 names the autocast at line 15 (line 14 once dedented) as what blocks it; what unblocks it is XLA101's device
# change at line 9 (autocast(device_type=device.type) then runs on XLA with bf16). XLA107's sync,
# appended to the loop around line 15, edits no line of it and must not be named.
AMP_PICKER = """
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("nccl")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = DDP(nn.Linear(4, 1).to(device))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(3):
        opt.zero_grad()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            loss = net(torch.randn(8, 4, device=device)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    main()
"""


def test_the_fix_a_promotion_waits_for_is_found_when_the_reason_names_another_line():
    code = src(AMP_PICKER)
    found, later = _check(code)
    (scaler,) = [i for i, f in enumerate(found) if f.code == "XLA103"]
    assert later[scaler].after == (("XLA101", 9),)
    out = fix_source(code, "t.py", Settings(), "modern")
    assert "GradScaler" not in out.source


# The device default waits for review, so `fix` holds the CUDA-only call's removal back with it
# (engine/consistency.py): `fix` changes nothing here.
HELD_BACK = """
import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu", help="cpu or cuda")
args = parser.parse_args()
model = nn.Linear(4, 1).to(args.device)
torch.cuda.synchronize()
"""


def test_plain_check_counts_no_fix_that_fix_holds_back(tmp_path: Path):
    # Held-out 176 (DETR): `check` said "1 fixable with `xla-lens fix`" and `fix` said "0 files
    # would change". Where `fix` could hold a safe fix back, `check` runs its rounds to know.
    script = tmp_path / "train.py"
    script.write_text(src(HELD_BACK))
    run = _cli_check(tmp_path)
    assert "fixable with `xla-lens fix`" not in run.stderr, run.stderr
    assert "(not applied by `fix`: Convert held this back" in run.stdout, run.stdout
    out = fix_source(src(HELD_BACK), "train.py", Settings(), "modern")
    assert out.source == src(HELD_BACK)
