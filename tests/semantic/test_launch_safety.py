"""A conversion never writes an XLA runtime call where the launcher's parent runs it:
torch_xla.launch then refuses to start ('Runtime is already initialized')."""

from __future__ import annotations

from tests.helpers import findings, fixed, src

LAUNCHED = """
import os
import torch
import torch.distributed as dist
import torch_xla

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
world_size = int(os.environ["WORLD_SIZE"])

def train(rank):
    local = torch.device("cuda")
    x = torch.zeros(3).to(local)

def _mp_fn(index):
    dist.init_process_group("xla", init_method="xla://")
    train(index)

if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
"""


def test_runtime_calls_in_parent_code_of_a_launched_script_are_for_review():
    by_line = {
        f.span.start.line + 1: f
        for f in findings(LAUNCHED)
        if f.fix is not None and f.code != "XLA204"
    }
    # The module-level picker and the env read run in the parent before torch_xla.launch.
    for line in (6, 7):
        f = by_line[line]
        assert not f.fix.safe, (f.code, f.message)
        assert "Runtime is already initialized" in f.fix.review_reason
        assert "needs review" in f.message
    # Code the replica runs (train() is called from _mp_fn) is fine.
    assert by_line[10].fix.safe
    converted = fixed(LAUNCHED)
    assert 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")' in converted
    assert "    local = torch_xla.device()" in converted


def test_single_process_scripts_keep_their_safe_module_level_fixes():
    code = """
    import torch
    device = torch.device("cuda")
    model = torch.nn.Linear(2, 2).to(device)
    """
    (f,) = [f for f in findings(code) if f.code == "XLA101"]
    assert f.fix.safe
    assert "torch_xla.device()" in fixed(code, "XLA101")
    assert src(code)
