"""XLA502: xmp.spawn's nprocs other than 1/None raises on torch_xla 2.x."""

import pytest
from xla_lens.rules.base import Severity

from tests.helpers import findings, fixed, src

CODE = "XLA502"
HEAD = "import torch_xla.distributed.xla_multiprocessing as xmp\n\ndef _mp_fn(index, args):\n    pass\n\n"


def test_a_literal_count_is_an_error_with_a_review_fix():
    text = HEAD + "xmp.spawn(_mp_fn, args=(1,), nprocs=8, start_method='fork')\n"
    (f,) = findings(text, CODE)
    assert "nprocs=8) raises ValueError" in f.message
    assert f.fix is not None and not f.fix.safe and "one process per device" in f.fix.review_reason
    # Convert leaves it; --unsafe-fixes drops the argument and keeps the others.
    assert fixed(text, CODE) == text
    assert "xmp.spawn(_mp_fn, args=(1,), start_method='fork')" in fixed(text, CODE, unsafe=True)


def test_an_expression_raises_unless_it_is_one():
    text = HEAD + "nprocs = args.nprocs or 8\nxmp.spawn(_mp_fn, args=(args,), nprocs=nprocs)\n"
    (f,) = findings(text, CODE)
    assert "raises ValueError on torch_xla 2.x unless it is 1 or None" in f.message
    assert "may be 1" in f.fix.review_reason


@pytest.mark.parametrize("value", ["None", "1"])
def test_one_or_none_is_fine(value: str):
    assert findings(HEAD + f"xmp.spawn(_mp_fn, nprocs={value})\n", CODE) == []


def test_a_positional_count_has_no_fix():
    (f,) = findings(HEAD + "xmp.spawn(_mp_fn, (), 8)\n", CODE)
    assert f.fix is None and f.manual


def test_the_legacy_target_takes_any_count():
    assert findings(HEAD + "xmp.spawn(_mp_fn, nprocs=8)\n", CODE, target="legacy") == []


def test_torch_xla_launch_is_not_spawn():
    text = src(
        """
        import torch_xla
        def _mp_fn(index):
            pass
        torch_xla.launch(_mp_fn)
        """
    )
    assert findings(text, CODE) == []


def test_xla501_no_longer_says_such_a_spawn_still_works():
    text = HEAD + "xmp.spawn(_mp_fn, nprocs=8)\n"
    assert findings(text, "XLA501") == []
    assert findings(HEAD + "xmp.spawn(_mp_fn)\n", "XLA501")


def test_a_name_bound_just_before_in_the_same_block_is_read():
    # A latent-diffusion TPU trainer (held-out 121): ``tpu_cores_per_node = None`` right above.
    body = "if use_v4:\n    cores = 1\n    _mp_fn(0)\nelse:\n    cores = NPROCS\n"
    body += "    xmp.spawn(_mp_fn, nprocs=cores)\n"
    assert findings(HEAD + body.replace("NPROCS", "None"), CODE) == []
    assert findings(HEAD + body.replace("NPROCS", "1"), CODE) == []
    (f,) = findings(HEAD + body.replace("NPROCS", "8"), CODE)
    assert "nprocs=cores" in f.message
    # Bound again between the two, or not in this block: not known.
    rebound = body.replace("    xmp.spawn", "    cores = int(cores)\n    xmp.spawn").replace(
        "NPROCS", "None"
    )
    assert len(findings(HEAD + rebound, CODE)) == 1
    assert (
        len(findings(HEAD + "cores = None\ndef go():\n    xmp.spawn(_mp_fn, nprocs=cores)\n", CODE))
        == 1
    )


def test_an_option_that_defaults_to_one_is_a_warning():
    # held-out 124's control: ``--nprocs`` defaults to 1, which torch_xla 2.x accepts.
    opts = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--nprocs', type=int, default=DEFAULT)\nargs = p.parse_args()\n"
    call = "xmp.spawn(_mp_fn, nprocs=args.nprocs)\n"
    (f,) = findings(HEAD + opts.replace("DEFAULT", "1") + call, CODE)
    assert f.severity == Severity.WARNING and "(its default, 1, works)" in f.message
    (g,) = findings(HEAD + opts.replace("DEFAULT", "8") + call, CODE)
    assert g.severity == Severity.ERROR
