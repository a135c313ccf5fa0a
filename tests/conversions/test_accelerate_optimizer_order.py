"""accelerate's form of the optimizer-before-move trap, proven by running (protocol in
README.md): an optimizer prepared in a ``prepare()`` call of its own before the model never
trains on XLA, so XLA109 reports it as a blocking error; its reorder, accepted on review,
trains like the original."""

from __future__ import annotations

from .harness import FIXTURES, assert_proven, prove

FIXTURE = FIXTURES / "accelerate_optimizer_prepared_first.py"


def test_left_as_is_the_model_never_trains_and_xla109_says_so():
    result = prove(FIXTURE)
    assert "XLA109" in result.remaining and "XLA109" not in result.applied
    orig, conv = result.original, result.converted
    assert orig.returncode == 0 and conv.returncode == 0, result.describe
    assert orig.losses[-1] < orig.losses[0] * 0.8
    assert conv.param_device.startswith("xla") and len(set(conv.losses)) == 1


def test_the_reorder_accepted_on_review_trains_like_the_original():
    result = prove(FIXTURE, accept_review=["XLA109"])
    assert_proven(result)
    out = result.converted_source
    assert out.index("model = accelerator.prepare(model)") < out.index("optimizer = accelerator")
