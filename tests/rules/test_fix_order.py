"""A finding must not vanish because another fix was applied first.

In the editor a person applies one quick fix (often XLA101's device picker) and then Convert;
the result must be what Convert alone gives. Rules that speak only to "a script being moved to
an accelerator" (XLA116's seed, XLA113's rank-0 prints) used to need CUDA evidence or no
torch_xla import, which XLA101's fix removes or adds.
"""

import itertools

import pytest
from xla_lens.engine import analyze
from xla_lens.engine.fixing import apply_fix, fix_source

from tests.helpers import src

SEEDED = """
import argparse
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=3)
args = p.parse_args()
torch.manual_seed(args.seed)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.3), nn.Linear(8, 1)).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(10):
    opt.zero_grad()
    net(torch.randn(2, 4, device=device)).sum().backward()
    opt.step()
"""

REPLICAS = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

def worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(5):
        opt.zero_grad()
        net(torch.randn(2, 4, device=device)).sum().backward()
        opt.step()
    print("worker finished")

if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
"""

FIXTURES = {"seeded": SEEDED, "replicas": REPLICAS}
# Known order dependence outside XLA113/XLA116 (reported to the lead, not fixed here): after
# XLA105's xm.optimizer_step alone the script counts as "already XLA", so XLA107 no longer
# adds the sync (optimizer_step does not sync); after XLA107's sync alone XLA105 goes quiet.
ORDER_DEPENDENT = frozenset({"XLA105", "XLA107"})


def _all_at_once(text: str) -> str:
    out = fix_source(text, target="modern")
    assert out.error is None
    return out.source


def _normal(text: str) -> tuple[list[str], list[str]]:
    """The program without the order of its added import lines (each fix appends its own)."""
    lines = text.splitlines()
    imports = sorted(line for line in lines if line.startswith(("import ", "from ")))
    return imports, [line for line in lines if not line.startswith(("import ", "from "))]


def _codes(text: str) -> list[str]:
    return sorted(f.code for f in analyze(text, target="modern").findings)


def _safe_codes(text: str) -> list[str]:
    found = analyze(text, target="modern").findings
    return sorted({f.code for f in found if f.fix is not None and f.fix.safe})


@pytest.mark.parametrize("name", FIXTURES)
def test_applying_any_one_fix_first_then_convert_gives_what_convert_gives(name):
    text = src(FIXTURES[name])
    expected = _all_at_once(text)
    firsts = [f for f in analyze(text, target="modern").findings if f.fix and f.fix.safe]
    assert {"XLA101", "XLA116"} <= {f.code for f in firsts}, [f.code for f in firsts]
    for first in firsts:
        if first.code in ORDER_DEPENDENT:
            continue
        after_one = apply_fix(text, first)
        got = _all_at_once(after_one)
        assert _normal(got) == _normal(expected), f"{first.code} applied first changes Convert"
        assert _codes(got) == _codes(expected)


def test_the_seed_finding_survives_the_device_fix_alone():
    text = src(SEEDED)
    (picker,) = [f for f in analyze(text, target="modern").findings if f.code == "XLA101"]
    after = apply_fix(text, picker)
    assert "torch_xla.device()" in after and "cuda" not in after
    assert "XLA116" in _codes(after)


def test_the_print_hint_survives_the_device_fix_alone():
    text = src(REPLICAS)
    assert "XLA113" in _codes(text)
    for picker in [f for f in analyze(text, target="modern").findings if f.code == "XLA101"]:
        assert "XLA113" in _codes(apply_fix(text, picker))


def test_fixing_code_by_code_in_every_order_ends_where_convert_ends():
    # One rule's fixes at a time (as a person working down the Problems list would), in every
    # order of the first three rules, the rest by Convert.
    text = src(SEEDED)
    expected = _all_at_once(text)
    codes = [c for c in _safe_codes(text) if c not in ORDER_DEPENDENT]
    assert {"XLA101", "XLA116"} <= set(codes)
    for order in itertools.permutations(codes):
        current = text
        for code in order:
            out = fix_source(current, target="modern", accept=lambda f, c=code: f.code == c)
            assert out.error is None
            current = out.source
        assert _normal(_all_at_once(current)) == _normal(expected), order


@pytest.mark.xfail(strict=True, reason="XLA105 first: XLA107 then adds no sync (see above)")
def test_the_optimizer_step_fix_first_keeps_the_sync():
    text = src(SEEDED)
    (step,) = [f for f in analyze(text, target="modern").findings if f.code == "XLA105"]
    assert "torch_xla.sync()" in _all_at_once(apply_fix(text, step))


@pytest.mark.parametrize("name", FIXTURES)
def test_convert_is_idempotent_on_the_fixtures(name):
    once = _all_at_once(src(FIXTURES[name]))
    assert _all_at_once(once) == once
