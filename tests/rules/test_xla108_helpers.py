"""XLA108 for a checkpoint handed to a save helper of another module.

``utils.save_on_master({"model": model.state_dict(), ...}, path)``: the torch.save that
writes the XLA tensors is in ``utils``, out of this file. The finding is at the call, with no
fix here: the change belongs inside the helper.
"""

from pathlib import Path

from xla_lens.engine import analyze

from tests.helpers import findings, fixed, src

HELPER_CALL = """
import torch
import utils

def main(args):
    model = build(args).to(args.device)
    model_without_ddp = model
    for epoch in range(args.epochs):
        train_one_epoch(model, optimizer, epoch)
        utils.save_on_master({
            'model': model_without_ddp.state_dict(),
            'optimizer': optimizer.state_dict(),
            'epoch': epoch,
            'args': args,
        }, checkpoint_path)
"""


def test_a_checkpoint_passed_to_a_helper_out_of_reach_is_reported_without_a_fix():
    (f,) = findings(HELPER_CALL, "XLA108")
    assert f.span.start.line + 1 == 9
    assert "`utils.save_on_master`" in f.message and "XLA tensors" in f.message
    assert f.fix is None
    assert "xm.save" in f.manual and "inside" in f.manual
    assert fixed(HELPER_CALL, "XLA108", unsafe=True) == src(HELPER_CALL)


def test_the_legacy_advice_keeps_xm_save_out_of_the_rank_check():
    (f,) = findings(HELPER_CALL, "XLA108", target="legacy")
    assert f.fix is None and "every replica" in f.manual


def test_from_imports_keywords_and_relative_modules_are_helpers_too():
    code = """
    from misc import save_checkpoint
    from . import ckpt_io
    save_checkpoint(state={"model": net.state_dict()}, path=p)
    ckpt_io.save_model(net.state_dict(), p)
    """
    found = findings(code, "XLA108")
    assert [f.span.start.line + 1 for f in found] == [3, 4]
    assert "`save_checkpoint`" in found[0].message
    assert "`ckpt_io.save_model`" in found[1].message


def test_libraries_methods_and_non_checkpoints_are_not_helpers():
    code = """
    import numpy as np
    import safetensors.torch
    import wandb
    import utils
    from accelerate import Accelerator
    accelerator = Accelerator()
    accelerator.save(model.state_dict(), "m.pt")
    safetensors.torch.save_file(model.state_dict(), "m.safetensors")
    wandb.save("m.pt")
    np.save("x.npy", arr)
    utils.save_json({"epoch": epoch, "acc": acc}, "log.json")
    utils.log_checkpoint({"model": model.state_dict()})
    saver.save_checkpoint({"model": model.state_dict()}, "c.pt")
    """
    assert findings(code, "XLA108") == []


def test_a_helper_of_this_file_is_followed_as_before():
    code = """
    import torch

    def save_on_master(state, path):
        if is_main_process():
            torch.save(state, path)

    save_on_master({"model": model.state_dict()}, "c.pt")
    """
    (f,) = findings(code, "XLA108")
    assert f.span.start.line + 1 == 5 and f.fix is not None  # at the torch.save, fixed there


def _sibling(tmp_path: Path, helper: str) -> list:
    (tmp_path / "utils.py").write_text(src(helper))
    script = tmp_path / "main.py"
    script.write_text(src(HELPER_CALL))
    result = analyze(script.read_text(), str(script))
    assert result.ok and not result.rule_errors
    return [f for f in result.findings if f.code == "XLA108"]


def test_a_sibling_helper_that_uses_torch_save_is_named(tmp_path: Path):
    found = _sibling(
        tmp_path,
        """
        import torch

        def is_main_process():
            return get_rank() == 0

        def save_on_master(*args, **kwargs):
            if is_main_process():
                torch.save(*args, **kwargs)
        """,
    )
    (f,) = found
    assert "utils.py" in f.message and "line 8" in f.message and "torch.save" in f.message
    assert f.fix is None


def test_a_sibling_helper_that_already_uses_xm_save_is_left_alone(tmp_path: Path):
    found = _sibling(
        tmp_path,
        """
        import torch_xla.core.xla_model as xm

        def save_on_master(state, path):
            xm.save(state, path)
        """,
    )
    assert found == []


def test_a_sibling_helper_that_copies_the_state_to_the_cpu_is_left_alone(tmp_path: Path):
    # Held-out 87 (allenai's tpu_pretrain utils.save_checkpoint): each entry `.to('cpu')`.
    found = _sibling(
        tmp_path,
        """
        import torch

        def save_on_master(state, path):
            for key in state["model"]:
                state["model"][key] = state["model"][key].to('cpu')
            torch.save(state, path)
        """,
    )
    assert found == []
