"""XLA202 on ``training_args.local_rank`` tests (FastChat's LoRA trainer, held-out 38): under
torch_xla's launcher transformers leaves local_rank at -1 in every replica, so ``== 0`` never
holds (the adapter is never saved) and ``in [-1, 0]`` holds everywhere."""

import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import findings, fixed

SCRIPT = """
from transformers import HfArgumentParser, Trainer, TrainingArguments


def train():
    parser = HfArgumentParser((TrainingArguments,))
    (training_args,) = parser.parse_args_into_dataclasses()
    trainer = Trainer(model=None, args=training_args)
    trainer.train()
    if {test}:
        trainer.model.save_pretrained(training_args.output_dir)
"""


def test_a_local_rank_zero_test_never_holds_under_the_xla_launcher():
    code = SCRIPT.replace("{test}", "training_args.local_rank == 0")
    (f,) = findings(code, "XLA202")
    assert "never True" in f.message and f.fix is not None and not f.fix.safe
    out = fixed(code, "XLA202", unsafe=True)
    assert "if training_args.process_index == 0:" in out


def test_first_process_or_not_distributed_holds_in_every_replica():
    for test in ("training_args.local_rank in [-1, 0]", "training_args.local_rank <= 0"):
        code = SCRIPT.replace("{test}", test)
        (f,) = findings(code, "XLA202")
        assert "every replica" in f.message and not f.fix.safe and "nodes" in f.fix.review_reason
        assert "if training_args.process_index == 0:" in fixed(code, "XLA202", unsafe=True)


def test_other_local_ranks_and_scripts_without_transformers_are_left_alone():
    assert findings(SCRIPT.replace("{test}", "training_args.local_rank != -1"), "XLA202") == []
    plain = "import torch\nif args.local_rank == 0:\n    print('first')\n"
    assert findings(plain, "XLA202") == []


PROBE = """
import os
import warnings

warnings.simplefilter("ignore")
import torch_xla
from transformers import TrainingArguments


def _mp_fn(index):
    a = TrainingArguments(os.environ["PROBE_OUT"])
    os.write(1, f"probe {a.local_rank} {a.local_process_index} {a.process_index}\\n".encode())


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
"""


@pytest.mark.xla
def test_the_premise_local_rank_is_minus_one_in_every_replica(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(PROBE), encoding="utf-8")
    env = {
        **os.environ,
        "PJRT_DEVICE": "CPU",
        "CPU_NUM_DEVICES": "2",
        "PROBE_OUT": str(tmp_path / "out"),
    }
    for key in ("LOCAL_RANK", "RANK", "WORLD_SIZE"):
        env.pop(key, None)
    run = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-1500:]
    seen = sorted(line.split()[1:] for line in run.stdout.splitlines() if line.startswith("probe"))
    # local_rank and local_process_index stay -1; process_index numbers the replicas.
    assert seen == [["-1", "-1", "0"], ["-1", "-1", "1"]]
