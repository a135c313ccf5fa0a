"""XLA113 on writes that provably run on the root replica only, in an already-XLA script.

A method whose body starts with an early return for the other replicas, or that every call
site (``trainer.save_results(...)`` on an instance, ``self.logger.write(...)``) runs under
``if xm.is_master_ordinal():`` / ``if rank == 0:``, writes once: no finding.
"""

from tests.helpers import findings

HEAD = """
import json
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


class Recorder:
    def __init__(self, out):
        self.out = out

    def dump(self, stats):
        with open(self.out + "/stats.json", "w") as f:
            json.dump(stats, f)

    def note(self, text):
        with open(self.out + "/notes.txt", "a") as f:
            f.write(text)
"""

TAIL = """

def _mp_fn(index):
    recorder = Recorder("out")
    trainer = Trainer(recorder)
    trainer.fit([])
%s

if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
"""


def lines(code: str) -> list[int]:
    return [f.span.start.line + 1 for f in findings(code, "XLA113")]


def _script(trainer: str, tail: str = "") -> str:
    return HEAD + trainer + TAIL % tail


def test_a_method_every_instance_call_runs_under_a_master_check_is_quiet():
    trainer = """
class Trainer:
    def __init__(self, recorder):
        self.recorder = recorder

    def fit(self, loader):
        for x in loader:
            xm.mark_step()
"""
    guarded = _script(
        trainer,
        "    if xm.is_master_ordinal():\n        recorder.dump({})\n"
        "    if xr.global_ordinal() == 0:\n        recorder.note('done')",
    )
    assert lines(guarded) == []
    # One unguarded instance call: the method writes on every replica again.
    unguarded = _script(
        trainer, "    if xm.is_master_ordinal():\n        recorder.dump({})\n    recorder.dump({})"
    )
    assert lines(unguarded) == [13]


def test_a_method_called_through_an_attribute_holding_the_instance_is_followed():
    trainer = """
class Trainer:
    def __init__(self, recorder):
        self.recorder = Recorder("logs")
        self.rank = xr.global_ordinal()

    def fit(self, loader):
        for x in loader:
            xm.mark_step()
        if self.rank == 0:
            self.recorder.dump({})
        self.recorder.note("end")
"""
    assert lines(_script(trainer)) == [17]  # note() runs on every replica; dump() does not


def test_early_returns_for_the_other_replicas_in_either_branch_are_guards():
    for guard in (
        "        if xr.process_index() != 0:\n            return\n",
        "        if xm.is_master_ordinal():\n            pass\n        else:\n            return\n",
        "        if not xm.is_master_ordinal():\n            return\n",
    ):
        trainer = f"""
class Trainer:
    def __init__(self, recorder):
        self.recorder = recorder

    def fit(self, loader):
        self.save("out/final.txt")

    def save(self, path):
{guard}        with open(path, "w") as f:
            f.write("final")
"""
        assert lines(_script(trainer, "    recorder.dump({})")) == [13], guard
