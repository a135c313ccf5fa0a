"""Fixes keep comments (held-out re-measure n6): when a rule rewrites a call spread over lines
(removes or adds a keyword, sets its arguments, replaces the whole call) the comment after each
argument stays with that argument, a removed argument's comment stays as a line where it was,
and a removed statement's comments are kept, once. Every comment of the input appears exactly
once in the output, the output parses, and fixing it again changes nothing."""

from __future__ import annotations

import io
import tokenize
from collections import Counter

import pytest

from tests.helpers import fixed, src


def _comments(code: str) -> Counter[str]:
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    return Counter(t.string for t in tokens if t.type == tokenize.COMMENT)


DDP = """
import torch.distributed as dist
import torch.nn as nn


def main(rank):
    dist.init_process_group(
        backend="nccl",  # fast collectives
        init_method="env://",  # from the launcher
    )
    model = nn.Linear(4, 1)
    model = nn.parallel.DistributedDataParallel(
        model,  # the network
        device_ids=[rank],  # one GPU per process
        output_device=rank,  # outputs here
    )
    return model
"""

LOADER = """
import torch
from torch.utils.data import DataLoader

ds = [torch.randn(4) for _ in range(8)]
loader = DataLoader(
    ds,  # the data
    batch_size=2,  # per step
    pin_memory=True,  # fast H2D
    shuffle=True,  # reshuffle
)
"""

SPAWN = """
import torch.multiprocessing as mp


def worker(rank, n):
    return rank + n


if __name__ == "__main__":
    mp.spawn(
        worker,  # per-process entry
        args=(2,),  # forwarded
        nprocs=2,  # one per GPU
        join=True,  # wait
    )
"""

MOVE = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1).cuda(
    0,  # first GPU
)
x = torch.randn(2, 4).to(
    "cuda",  # where
    non_blocking=True,  # async copy
)
"""

SCALER = """
import torch

scaler = torch.amp.GradScaler(
    "cuda",  # device
    init_scale=1024.0,  # start small
)
"""

AUTOCAST = """
import torch

with torch.autocast(
    "cuda",  # device type
    dtype=torch.bfloat16,  # bf16
):
    y = torch.ones(2) * 2
"""

SAVE = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
torch.save(
    obj=model.state_dict(),  # weights
    f="m.pt",  # path
)
"""

LOAD = """
import torch

state = torch.load(
    "m.pt",  # path
    map_location="cuda",  # onto the GPU
)
"""

REMOVED = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1).to("cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
# scaling for fp16
scaler = torch.cuda.amp.GradScaler(
    init_scale=1024.0,  # start small
    growth_interval=100,  # grow slowly
)  # the scaler
for _ in range(2):
    loss = model(torch.randn(2, 4).to("cuda")).sum()
    scaler.scale(loss).backward()  # backward
    scaler.step(opt)  # step
    scaler.update()  # update scale
"""

PICKED = """
import torch

device = torch.device(
    "cuda",  # the GPU
)
"""

CASES = [
    # (fixture, rule, unsafe, lines the output must hold)
    (
        DDP,
        "XLA205",
        True,
        ["    model,  # the network\n        # one GPU per process\n        # outputs here\n    )"],
    ),
    (
        LOADER,
        "XLA403",
        False,
        ["    batch_size=2,  # per step\n    # fast H2D\n    shuffle=True,  # reshuffle\n"],
    ),
    (
        SPAWN,
        "XLA204",
        True,
        ["        worker,  # per-process entry\n", "        args=(2,),  # forwarded\n"],
    ),
    (MOVE, "XLA101", False, ["    torch_xla.device(),  # first GPU\n"]),
    (SCALER, "XLA103", False, []),
    (
        AUTOCAST,
        "XLA102",
        False,
        ['    "xla",  # device type\n', "    dtype=torch.bfloat16,  # bf16\n"],
    ),
    (SAVE, "XLA108", False, ["    model.state_dict(),  # weights\n", '    "m.pt",  # path\n']),
    (LOAD, "XLA115", False, ['    "m.pt",  # path\n', '    map_location="cpu",  # onto the GPU\n']),
    # A call rewritten to one with nothing in common: its comments go above the statement.
    (PICKED, "XLA101", False, ["# the GPU\ndevice = torch_xla.device()\n"]),
    (REMOVED, "XLA103", False, ["# start small\n# grow slowly\n# the scaler\n"]),
]


@pytest.mark.parametrize(
    ("code", "rule", "unsafe", "expected"), CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)]
)
def test_every_comment_of_a_rewritten_multiline_call_is_kept_once(
    code: str, rule: str, unsafe: bool, expected: list[str]
) -> None:
    out = fixed(code, rule, unsafe=unsafe)  # parses, and a second fix changes nothing
    assert out != src(code), "the rule made no change: the fixture no longer exercises it"
    assert _comments(out) == _comments(src(code)), out
    for text in expected:
        assert text in out, out


def test_every_comment_is_kept_once_when_all_rules_fix_the_file() -> None:
    for code, _, _, _ in CASES:
        out = fixed(code, unsafe=True)
        assert _comments(out) == _comments(src(code)), out


def test_a_keyword_added_after_a_commented_last_argument_takes_no_comment() -> None:
    # XLA402 adds drop_last=True; the comment after the old last argument stays with it.
    code = """
    import torch
    from torch.utils.data import DataLoader

    ds = [torch.randn(4) for _ in range(10)]
    loader = DataLoader(
        ds,  # the data
        batch_size=4,  # per step
    )
    model = torch.nn.Linear(4, 1)
    for x in loader:
        model(x).sum().backward()
    """
    out = fixed(code, "XLA402", unsafe=True)
    assert "    batch_size=4,  # per step\n    drop_last=True,\n)" in out, out
