"""XLA411: a collective only the master replica calls hangs every run with more than one
replica (held-out 140's TPU trainer reduced its validation loss with ``xm.mesh_reduce`` under
``if is_master_process:``). Paired calls in both branches, or in the same function outside the
branch, and calls naming a process group are left alone."""

from tests.helpers import findings

VALIDATE = """
import torch
import torch_xla
import torch_xla.core.xla_model as xm


def validate(model, loader, step):
    is_master_process = xm.is_master_ordinal()
    total = torch.zeros((), device=torch_xla.device())
    for x, y in loader:
        total += torch.nn.functional.mse_loss(model(x), y)
    if is_master_process:
        mean = xm.mesh_reduce("val_loss", total.item(), lambda v: sum(v) / len(v))
        print(step, mean)
"""


def _lines(code: str) -> list[int]:
    return [f.span.start.line + 1 for f in findings(code, "XLA411")]


def test_a_collective_under_the_master_check_is_reported_with_no_fix():
    (f,) = findings(VALIDATE, "XLA411")
    assert f.span.start.line + 1 == 12 and f.fix is None
    assert "mesh_reduce() is a collective" in f.message
    assert "`if is_master_process:`, line 11" in f.message and "hangs" in f.message
    assert "in every replica" in f.manual


def test_the_other_spellings_of_one_replica():
    for test in (
        "xm.is_master_ordinal()",
        "dist.get_rank() == 0",
        "args.local_rank in [-1, 0]",
        "rank == 0 and step % 10 == 0",
        "is_main_process",
    ):
        code = VALIDATE.replace("if is_master_process:", f"if {test}:").replace(
            "import torch\n", "import torch\nimport torch.distributed as dist\n"
        )
        assert _lines(code) == [13], test
    else_branch = VALIDATE.replace(
        "    if is_master_process:\n", "    if not is_master_process:\n        pass\n    else:\n"
    )
    assert _lines(else_branch) == [14]
    barrier = VALIDATE.replace(
        'xm.mesh_reduce("val_loss", total.item(), lambda v: sum(v) / len(v))',
        "dist.barrier()",
    ).replace("import torch\n", "import torch\nimport torch.distributed as dist\n")
    assert _lines(barrier) == [13]


def test_paired_calls_groups_and_other_tests_are_left_alone():
    paired = VALIDATE.replace(
        "        print(step, mean)\n",
        "        print(step, mean)\n"
        "    else:\n"
        '        xm.mesh_reduce("val_loss", total.item(), lambda v: sum(v) / len(v))\n',
    )
    assert _lines(paired) == []
    # master-first: the others wait before, the master releases them after its work.
    master_first = """
import torch.distributed as dist


def cache(rank, build):
    if rank != 0:
        dist.barrier()
    data = build()
    if rank == 0:
        dist.barrier()
    return data
"""
    assert _lines(master_first) == []
    group = VALIDATE.replace(
        'xm.mesh_reduce("val_loss", total.item(), lambda v: sum(v) / len(v))',
        "dist.all_reduce(total, group=masters)",
    ).replace("import torch\n", "import torch\nimport torch.distributed as dist\n")
    assert _lines(group) == []
    for other in ("world_size > 1", "len(ranked) == 0", "args.root", "step % 10 == 0"):
        assert _lines(VALIDATE.replace("if is_master_process:", f"if {other}:")) == [], other
