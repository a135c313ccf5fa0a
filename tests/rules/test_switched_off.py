"""Code a script switched off itself (held-out 106's TPU port of NVIDIA's SSD:
``args.distributed = False`` at the top of the spawned function, then ``if args.distributed:``
around a ``dist.get_rank()`` and an apex DDP): it never runs, so no finding there, nor on the
optional apex import whose only use it holds. Anything that could turn the flag back on before
the test keeps the block reported."""

from __future__ import annotations

from xla_lens.engine.analysis import analyze

from tests.helpers import findings, src

SWITCHED_OFF = src("""
import torch
import torch.distributed
import torch_xla
import torch_xla.core.xla_model as xm

try:
    from apex.parallel import DistributedDataParallel as DDP
except ImportError:
    print("APEX not installed")


def train(index, args):
    args.distributed = False
    if args.distributed:
        args.seed = (args.seed + torch.distributed.get_rank()) % 2**32
    print("seed {}".format(args.seed), args)
    torch.manual_seed(args.seed)
    xm.set_rng_state(args.seed)
    device = torch_xla.device()
    model = torch.nn.Linear(2, 2).to(device)
    if args.distributed:
        model = DDP(model)
    return model


if __name__ == "__main__":
    torch_xla.launch(train, args=(None,))
""")


def _codes(text: str) -> list[tuple[str, int]]:
    return [(f.code, f.span.start.line + 1) for f in findings(text) if f.code != "XLA116"]


def test_blocks_under_a_flag_the_function_set_false_are_not_reported():
    assert _codes(SWITCHED_OFF) == []


def test_the_same_blocks_without_the_switch_are_reported():
    live = SWITCHED_OFF.replace("    args.distributed = False\n", "")
    codes = {c for c, _ in _codes(live)}
    assert {"XLA202", "XLA405"} <= codes


def test_a_later_store_keeps_the_block_live():
    text = SWITCHED_OFF.replace(
        "    device = torch_xla.device()\n",
        "    device = torch_xla.device()\n    args.distributed = args.world > 1\n",
    )
    assert any(c == "XLA405" for c, _ in _codes(text))


def test_a_call_handed_the_holder_that_cannot_be_followed_keeps_the_block_live():
    text = SWITCHED_OFF.replace(
        "    device = torch_xla.device()\n",
        "    device = torch_xla.device()\n    configure(args)\n",
    ).replace("import torch\n", "import torch\nfrom configlib import configure\n", 1)
    codes = _codes(text)
    assert any(c == "XLA405" for c, _ in codes)
    # The first block comes before the call: still switched off.
    assert not any(c == "XLA202" for c, _ in codes)


def test_a_workspace_helper_that_stores_no_such_attribute_leaves_it_switched_off(tmp_path):
    (tmp_path / "helpers.py").write_text(
        "def configure(args):\n    args.world_size = 1\n    return args\n"
    )
    text = SWITCHED_OFF.replace(
        "    device = torch_xla.device()\n",
        "    device = torch_xla.device()\n    configure(args)\n",
    ).replace("import torch\n", "import torch\nfrom helpers import configure\n", 1)
    script = tmp_path / "train.py"
    script.write_text(text)
    found = analyze(text, str(script)).findings
    assert [f.code for f in found if f.code in ("XLA405", "XLA202")] == []
    (tmp_path / "helpers.py").write_text(
        "def configure(args):\n    args.distributed = True\n    return args\n"
    )
    found = analyze(text, str(script)).findings
    assert "XLA405" in [f.code for f in found]


def test_a_flag_that_is_not_a_falsy_literal_is_no_switch():
    text = SWITCHED_OFF.replace("args.distributed = False", "args.distributed = True")
    assert any(c == "XLA405" for c, _ in _codes(text))


def test_a_switch_under_a_condition_is_no_switch():
    text = SWITCHED_OFF.replace(
        "    args.distributed = False\n", "    if args.tpu:\n        args.distributed = False\n"
    )
    assert any(c == "XLA405" for c, _ in _codes(text))


def test_an_optional_import_used_outside_switched_off_code_is_still_reported():
    text = SWITCHED_OFF.replace("    return model\n", "    return model, DDP\n")
    assert ("XLA405", 7) in _codes(text)


def test_a_plain_name_set_false_is_a_knob_and_what_it_guards_stays_reported():
    """``use_compile = False  # TODO fix`` (build-nanogpt), ``save_model = False``
    (Conditional_Diffusion_MNIST): the user turns it on by editing that line."""
    text = SWITCHED_OFF.replace(
        "    args.distributed = False\n", "    distributed = False\n"
    ).replace("if args.distributed:", "if distributed:")
    codes = {c for c, _ in _codes(text)}
    assert {"XLA202", "XLA405"} <= codes


VERSION_GATED = src("""
import torch
from packaging import version

_use_native_amp = False
_use_apex = False
if version.parse(torch.__version__) < version.parse("1.6"):
    from apex import amp
    _use_apex = True
else:
    _use_native_amp = True
    from torch.cuda.amp import autocast


def step(model, optimizer, loss, fp16):
    if fp16 and _use_native_amp:
        scaler = torch.cuda.amp.GradScaler()
        scaler.scale(loss).backward()
    elif _use_apex:
        with amp.scale_loss(loss, optimizer) as scaled:
            scaled.backward()
""")


def test_a_branch_for_torch_1_and_the_flags_it_alone_sets_never_run():
    """VL-T5's caption.py (held-out 114): torch_xla 2.9 needs torch 2.9."""
    lines = {line for code, line in _codes(VERSION_GATED) if code in ("XLA405", "XLA103")}
    assert 7 not in lines and 20 not in lines  # apex import, apex.amp.scale_loss
    assert 16 in lines  # the native-AMP scaler of the live branch is still converted


def test_a_branch_for_torch_2_still_runs():
    text = VERSION_GATED.replace('version.parse("1.6")', 'version.parse("2.1")')
    lines = {line for code, line in _codes(text) if code == "XLA405"}
    assert 7 in lines
