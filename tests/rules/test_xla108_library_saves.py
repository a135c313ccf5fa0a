"""XLA108 only for torch.save, or a project helper seen to reach it.

A save of an XLA-aware library (NeuronX Distributed's ``checkpointing.save`` /
``nxd.save_checkpoint``) moves the tensors itself; a save function of a module that is not in
the workspace is a library's; a script already written for XLA whose helper cannot be read
chose its checkpoint path itself. None of them get XLA108.
"""

from pathlib import Path

from xla_lens.engine import analyze

from tests.helpers import findings

NEURON = """
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import neuronx_distributed as nxd
from neuronx_distributed.parallel_layers import checkpointing
from neuronx_distributed.trainer import save_checkpoint


def train(model, optimizer, loader, out):
    device = torch_xla.device()
    model = model.to(device)
    for x in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        xm.optimizer_step(optimizer)
    checkpointing.save({"model": model.state_dict()}, out)
    nxd.save_checkpoint(out, tag="final", model=model, optimizer=optimizer)
    save_checkpoint(out, tag="final", model=model.state_dict())
"""


def test_neuronx_distributed_checkpoint_api_is_not_reported():
    assert findings(NEURON, "XLA108") == []
    # The same calls in a CUDA script being converted: still the library's own saves.
    cuda = NEURON.replace("device = torch_xla.device()", 'device = torch.device("cuda")')
    assert findings(cuda, "XLA108") == []


def _analyse(tmp_path: Path, code: str, siblings: dict[str, str]) -> list[int]:
    from tests.helpers import src

    for name, text in siblings.items():
        (tmp_path / name).write_text(src(text))
    script = tmp_path / "train.py"
    script.write_text(src(code))
    result = analyze(script.read_text(), str(script))
    assert result.ok and not result.rule_errors
    return [f.span.start.line + 1 for f in result.findings if f.code == "XLA108"]


CUDA_CALLER = """
import torch
import ckpt_tools

def main(model, optimizer):
    model = model.cuda()
    ckpt_tools.save_state({"model": model.state_dict()}, "c.pt")
"""


def test_a_save_function_of_a_module_outside_the_workspace_is_a_library_s(tmp_path: Path):
    assert _analyse(tmp_path, CUDA_CALLER, {}) == []


def test_the_same_call_reaching_torch_save_in_the_workspace_is_reported(tmp_path: Path):
    sibling = {
        "ckpt_tools.py": "import torch\n\ndef save_state(obj, path):\n    torch.save(obj, path)\n"
    }
    assert _analyse(tmp_path, CUDA_CALLER, sibling) == [6]
    # A helper of the workspace that writes some other way is not torch.save.
    other = {
        "ckpt_tools.py": "import safetensors.torch\n\ndef save_state(obj, path):\n"
        "    safetensors.torch.save_file(obj['model'], path)\n"
    }
    assert _analyse(tmp_path, CUDA_CALLER, other) == []


def test_an_xla_script_s_helper_out_of_sight_is_its_own_choice():
    xla = """
    import torch_xla
    import torch_xla.core.xla_model as xm
    import utils

    def _mp_fn(index):
        model = build().to(torch_xla.device())
        for x in loader:
            xm.mark_step()
        utils.save_on_master({"model": model.state_dict()}, "c.pt")

    torch_xla.launch(_mp_fn)
    """
    assert findings(xla, "XLA108") == []
