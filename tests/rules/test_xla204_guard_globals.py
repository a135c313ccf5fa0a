"""XLA204 when the training function reads a global that only the ``__main__`` block binds
(RIFE's ``train(model, local_rank)`` reads ``args.batch_size``; ``args`` is parsed in the block,
held-out 117). torch_xla.launch starts its processes with the ``spawn`` method: they import the
script as ``__mp_main__`` and never run that block, so every replica raises NameError. No launch
is offered until the global moves; a Trainer script's ``_mp_fn`` waits for review."""

import subprocess
import sys

from xla_lens.rules.base import Severity

from tests.helpers import findings, fixed, src

DISTRIBUTED = """
import torch
import torch.distributed as dist


def helper():
    return args.batch_size


def train(local_rank):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    return model, helper()


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=4)
    args = parser.parse_args()
    train(0)
"""


def test_a_global_only_the_main_block_binds_leaves_no_launch_fix():
    (f,) = findings(DISTRIBUTED, "XLA204")
    assert f.fix is None
    assert "`helper()` reads `args` (line 6), bound only in the `if __name__ ==" in f.manual
    assert f.manual.startswith("First: each replica would fail at once")
    assert fixed(DISTRIBUTED, "XLA204", unsafe=True) == src(DISTRIBUTED)


def test_the_global_bound_at_module_level_too_is_not_named():
    code = DISTRIBUTED.replace(
        "import torch.distributed as dist\n", "import torch.distributed as dist\n\nargs = None\n"
    )
    (f,) = findings(code, "XLA204")
    assert f.fix is not None and "bound only" not in (f.fix.review_reason or "")


def test_a_local_of_the_same_name_is_not_the_global():
    code = DISTRIBUTED.replace("    return args.batch_size", "    args = object()\n    return args")
    (f,) = findings(code, "XLA204")
    assert f.fix is not None and "bound only" not in (f.fix.review_reason or "")


TRAINER = """
from transformers import Trainer


def main():
    Trainer(model=None, args=training_args).train()


if __name__ == "__main__":
    training_args = {"output_dir": "out"}
    main()
"""


def test_a_trainer_entry_reading_a_main_block_global_waits_for_review():
    (f,) = findings(TRAINER, "XLA204")
    assert f.severity == Severity.INFORMATION
    assert f.fix is not None and not f.fix.safe
    assert "`main()` reads `training_args` (line 5)" in f.fix.review_reason
    assert fixed(TRAINER, "XLA204") == src(TRAINER)


def test_the_name_error_is_what_a_spawned_process_gets(tmp_path):
    # What the reason claims, with the standard library's spawn start method (the one
    # torch_xla.launch uses): the child imports the script and never runs its main block.
    script = tmp_path / "spawned.py"
    script.write_text(
        src("""
        import multiprocessing as mp


        def train(index):
            return args


        def _mp_fn(index):
            train(index)


        if __name__ == "__main__":
            args = 1
            ctx = mp.get_context("spawn")
            p = ctx.Process(target=_mp_fn, args=(0,))
            p.start()
            p.join()
            raise SystemExit(p.exitcode)
        """),
        encoding="utf-8",
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "NameError: name 'args' is not defined" in run.stderr
