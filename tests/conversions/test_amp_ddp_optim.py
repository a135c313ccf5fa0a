"""AMP, optimizer, DDP and Trainer conversions, proven by running (fixtures/*.py, protocol in
README.md): each original runs on the CPU, the safe conversion runs under torch_xla PJRT CPU,
and the losses must agree; the traps prove that what the conversion leaves alone had to be
left alone (a blocking error, a fix for review) and why."""

from __future__ import annotations

import tempfile

from xla_lens.engine import analyze
from xla_lens.rules.base import Severity

from .harness import FIXTURES, assert_proven, prove


def _finding(source: str, code: str):
    (found,) = [f for f in analyze(source, target="modern").findings if f.code == code]
    return found


def test_optimizer_built_before_the_move_is_reordered_and_trains_on_xla():
    result = prove(FIXTURES / "optimizer_before_move.py")
    assert_proven(result)
    assert "XLA109" in result.applied
    out = result.converted_source
    assert out.index("model.to(device)") < out.index("optimizer = torch.optim.Adam(")
    assert "# the usual place in CUDA scripts" in out  # the moved statement's comment stays


def test_trainer_class_stale_optimizer_is_a_blocking_error_and_why():
    result = prove(FIXTURES / "trainer_class_stale_optimizer.py")
    assert "XLA109" in result.remaining
    finding = _finding(result.converted_source, "XLA109")
    assert finding.severity == Severity.ERROR and finding.fix is None
    assert "self.model" in finding.manual
    # XLA109 cannot reorder across methods, so pointing the device at XLA would strand the
    # optimizer: that fix waits for review, and the converted script still trains (on the CPU).
    picker = _finding(result.converted_source, "XLA101")
    assert not picker.fix.safe and "the optimizer built on line" in picker.fix.review_reason
    orig, conv = result.original, result.converted
    assert orig.returncode == 0 and conv.returncode == 0
    assert orig.losses[-1] < orig.losses[0] * 0.5
    assert conv.losses == orig.losses and conv.param_device == "cpu"
    # The review accepted: the model reaches XLA and never trains (why it is a review).
    reviewed = prove(
        FIXTURES / "trainer_class_stale_optimizer.py", run_original=False, unsafe=True
    ).converted
    assert reviewed.param_device.startswith("xla") and len(set(reviewed.losses)) == 1


def test_helper_returning_model_and_optimizer_is_a_blocking_error():
    source = (FIXTURES / "helper_returns_model_and_optimizer.py").read_text()
    finding = _finding(source, "XLA109")
    assert finding.severity == Severity.ERROR and finding.fix is None
    assert "build()" in finding.manual and finding.related


def test_cuda_amp_scaler_becomes_bf16_autocast_without_scaler():
    result = prove(FIXTURES / "amp_cuda_scaler.py")
    assert_proven(result)
    out = result.converted_source
    assert 'torch.autocast("xla", dtype=torch.bfloat16)' in out and "GradScaler(" not in out
    for comment in ("# dynamic scale", "# grow or shrink the scale", "# every step"):
        assert comment in out
    assert {"XLA102", "XLA103"} <= set(result.applied)


def test_float16_autocast_keeps_its_loss_scaler():
    result = prove(FIXTURES / "amp_float16_scaler.py", cuda_shim=True)
    assert_proven(result)
    assert "XLA103" in result.remaining
    assert "scaler.scale(loss).backward()" in result.converted_source
    finding = _finding(result.converted_source, "XLA103")
    assert not finding.fix.safe and "float16" in finding.fix.review_reason
    assert finding.fix.ops[0].code == 'torch.amp.GradScaler("xla")'


def test_ddp_with_backend_flag_is_kept_over_the_xla_backend():
    result = prove(FIXTURES / "ddp_amp_backend_flag.py")
    assert_proven(result)
    out = result.converted_source
    assert '"--dist-backend", default="xla"' in out
    assert "ddp_model = DDP(model)" in out and "device_ids" not in out
    # DDP all-reduces during backward: no second reduction, a plain optimizer step.
    assert "reduce_gradients" not in out and "optimizer.step()" in out
    assert "optimizer_step" not in out and "GradScaler(" not in out


def test_device_type_string_picker_is_left_for_review_and_still_runs():
    result = prove(FIXTURES / "amp_device_type_string.py")
    # The picker feeds string tests ("cuda" in device): it cannot change safely and waits
    # for review, so the script still runs as before. The device_type derivation gains an
    # XLA case (inert until the picker says "xla"), after which the autocast keyed on it
    # follows the device by itself and needs no change (test_autocast_device_type.py).
    assert {"XLA101", "XLA103"} <= set(result.remaining)
    assert "XLA102" in result.applied and "XLA102" not in result.remaining
    assert '"xla" if "xla" in device else "cpu"' in result.converted_source
    assert result.converted.returncode == 0
    assert result.converted.losses == result.original.losses
    assert "torch.autocast(device_type=device_type, dtype=ptdtype)" in result.converted_source


def test_hf_trainer_arguments_from_parser_and_subclass():
    with tempfile.TemporaryDirectory() as out_dir:
        result = prove(
            FIXTURES / "hf_trainer_parsed_args.py",
            args=["--output_dir", out_dir, "--max_steps", "3"],
            timeout=300,
        )
    assert_proven(result)
    assert 'optim: str = field(default="adamw_torch_xla")' in result.converted_source
    # Nothing in the file sets the loader workers: the finding says which flag to pass.
    finding = _finding(result.converted_source, "XLA302")
    assert finding.fix is None and "dataloader_num_workers" in finding.manual


def test_parameters_listed_before_the_move_are_taken_after_it_and_train_on_xla():
    # Held-out 43 (AnimateDiff): ``trainable = list(...)`` before the move, the optimizer after.
    result = prove(FIXTURES / "optimizer_params_list_before_move.py")
    assert_proven(result)
    assert "XLA109" in result.applied
    out = result.converted_source
    assert out.index("model.to(device)") < out.index("trainable = [p for p in")
    assert "# after the list: stale on XLA" in out
    # Left as it was, the list keeps the CPU Parameters: the model on XLA never changes.
    stale = out.replace("    model.to(device)\n    trainable = [p", "    trainable = [p", 1)
    stale = stale.replace(
        "    optimizer = torch.optim.AdamW(",
        "    model.to(device)\n    optimizer = torch.optim.AdamW(",
        1,
    )
    assert stale != out
    with tempfile.TemporaryDirectory() as tmp:
        from pathlib import Path

        from .harness import _env, run_script

        script = Path(tmp) / "stale.py"
        script.write_text(stale)
        run = run_script(script, env=_env(4, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1"))
    assert run.returncode == 0, run.stderr
    losses = [line for line in run.stdout.splitlines() if line.startswith("xla-lens-loss")]
    assert len(losses) == 4 and len(set(losses)) == 1
