"""A torch_xla import a fix needs goes after the environment the script sets up before its own
torch_xla imports (held-out 114's control: ``os.environ["PJRT_DEVICE"] = "TPU"`` first).
Imported earlier, torch_xla sets up ``XLA_FLAGS`` before the script does, and the script's
plain assignment then drops torch_xla's defaults (its probe: ``--xla_dump_hlo_as_text
--xla_cpu_enable_fast_math=false`` became ``--xla_dump_hlo_as_text``)."""

from __future__ import annotations

from tests.helpers import fixed, src

ENV_FIRST = src("""
import os
os.environ["XLA_FLAGS"] = "--xla_dump_hlo_as_text"
import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()
""")


def test_the_new_import_follows_the_scripts_environment_set_up():
    out = fixed(ENV_FIRST)
    assert "torch_xla.device()" in out
    assert out.index('os.environ["XLA_FLAGS"]') < out.index("import torch_xla\n")
    assert out.index("import torch_xla.core.xla_model as xm") < out.index("import torch_xla\n")


def test_other_code_before_the_scripts_import_keeps_the_leading_block():
    text = ENV_FIRST.replace(
        'os.environ["XLA_FLAGS"] = "--xla_dump_hlo_as_text"\n',
        'os.environ["XLA_FLAGS"] = "--xla_dump_hlo_as_text"\nprint("start")\n',
    )
    out = fixed(text)
    assert out.index("import torch_xla\n") < out.index('os.environ["XLA_FLAGS"]')
