"""XLA108 on state dicts written with safetensors while on the XLA device: diffusers'
``save_lora_weights`` and safetensors' ``save_file`` raise on XLA tensors ("Attempted to access
the data pointer on an invalid python storage", measured on torch_xla 2.9). Held-out 37's
diffusers LoRA example writes accelerate-prepared state in a save-state hook and at the end."""

from tests.helpers import findings

ACCELERATE = """
import torch
from accelerate import Accelerator
from diffusers import StableDiffusionPipeline
from peft.utils import get_peft_model_state_dict


def main(unet, optimizer, loader, output_dir):
    accelerator = Accelerator(mixed_precision="bf16")

    def save_model_hook(models, weights, out):
        layers = None
        for model in models:
            layers = get_peft_model_state_dict(model)
            weights.pop()
        StableDiffusionPipeline.save_lora_weights(save_directory=out, unet_lora_layers=layers)

    accelerator.register_save_state_pre_hook(save_model_hook)
    unet, optimizer, loader = accelerator.prepare(unet, optimizer, loader)
    for batch in loader:
        accelerator.backward(unet(batch).mean())
        optimizer.step()
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(unet)
        state = get_peft_model_state_dict(unwrapped)
        StableDiffusionPipeline.save_lora_weights(output_dir, unet_lora_layers=state)
"""


def test_lora_state_of_prepared_models_is_written_with_safetensors():
    found = findings(ACCELERATE, "XLA108")
    assert [f.span.start.line for f in found] == [14, 24]
    assert all("safetensors" in f.message and f.fix is None and f.manual for f in found)
    assert "v.cpu()" in found[0].manual


def test_a_module_accelerate_never_prepares_is_left_alone():
    code = ACCELERATE.replace(
        "unet, optimizer, loader = accelerator.prepare(unet, optimizer, loader)", "pass"
    ).replace("accelerator.register_save_state_pre_hook(save_model_hook)", "pass")
    assert findings(code, "XLA108") == []


def test_save_file_of_a_module_the_script_moves_once_it_is_converted():
    code = """
    import torch
    from safetensors.torch import save_file

    model = torch.nn.Linear(4, 1).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        model(torch.randn(2, 4, device="cuda")).sum().backward()
        opt.step()
    save_file(model.state_dict(), "model.safetensors")
    cpu_net = torch.nn.Linear(4, 1)
    save_file(cpu_net.state_dict(), "cpu.safetensors")
    """
    (f,) = findings(code, "XLA108")
    assert "`save_file(...)` writes the state of `model`" in f.message
