"""XLA405 on a dispatch over the device's kind that raises for every kind it does not list
(pangu-weather-ddp's ``show_memory(device)``, held-out 147: on XLA ``str(device)`` is "xla:0",
so the converted script stopped at its first call), and XLA118 at the script's call when the
helper is in another module of the project."""

from pathlib import Path

from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_calls

from tests.helpers import findings

SHOW_MEMORY = """
import os

import torch


def show_memory(device, prompt=""):
    dev = str(device)
    if "cuda" in dev:
        info = torch.cuda.memory_allocated()
    elif "mps" in dev:
        info = torch.mps.current_allocated_memory()
    elif "cpu" in dev:
        info = os.getpid()
    else:
        raise NotImplementedError(f"Unsupported device: {dev}")
    print(prompt, info)
"""


def test_a_device_kind_dispatch_that_raises_for_others_is_reported_at_the_raise():
    (f,) = [f for f in findings(SHOW_MEMORY, "XLA405") if "dispatch" in f.message]
    assert f.span.start.line + 1 == 15 and f.fix is None
    assert "knows cuda/mps/cpu only" in f.message and '"xla:0"' in f.message
    assert "XLA branch" in f.manual


def test_an_xla_branch_a_fallback_or_another_test_is_left_alone():
    with_xla = SHOW_MEMORY.replace(
        'elif "cpu" in dev:', 'elif "xla" in dev:\n        info = 0\n    elif "cpu" in dev:'
    )
    fallback = SHOW_MEMORY.replace(
        '        raise NotImplementedError(f"Unsupported device: {dev}")', "        info = None"
    )
    other = SHOW_MEMORY.replace('elif "mps" in dev:', "elif os.environ.get('MEM'):")
    modes = SHOW_MEMORY.replace("dev = str(device)", "mode = str(device)").replace(
        " in dev:", " in mode:"
    )
    for code in (with_xla, fallback, other, modes):
        assert not [f for f in findings(code, "XLA405") if "dispatch" in f.message]


def test_the_scripts_call_of_such_a_helper_names_it(tmp_path: Path):
    workspace_calls.clear_cache()
    workspace.clear_cache()
    (tmp_path / "util.py").write_text(SHOW_MEMORY.lstrip("\n"))
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nfrom util import show_memory\n\n\n"
        "def train(model, loader, opt, device):\n"
        "    for x, y in loader:\n"
        '        show_memory(device, "before")\n'
        "        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA118"]
    assert f.span.start.line + 1 == 7 and "knows cuda/mps/cpu only" in f.message
    workspace_calls.clear_cache()
    workspace.clear_cache()
