"""XLA501 leaves alone the old torch_xla API a script keeps behind a version test (held-out
91's control, PositiveLoss/kwt's train_xla.py): under ``if hasattr(xm, "get_ordinal"):``,
after an ``if hasattr(...): return <new API>`` (the fallback when the test fails), and in an
``except ModuleNotFoundError:`` handler, where the rewrite raised UnboundLocalError."""

from tests.helpers import findings, src

COMPAT = src("""
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def xla_device(xm):
    try:
        import torch_xla
    except ModuleNotFoundError:
        return xm.xla_device()
    if hasattr(torch_xla, "device"):
        return torch_xla.device()
    return xm.xla_device()


def xla_rank(xm):
    if hasattr(xr, "global_ordinal"):
        return int(xr.global_ordinal())
    if hasattr(xm, "get_ordinal"):
        return int(xm.get_ordinal())
    return 0
""")


def test_version_guarded_old_api_is_left_alone():
    assert findings(COMPAT, "XLA501") == []


def test_the_same_calls_unguarded_are_still_reported():
    code = src("""
    import torch_xla.core.xla_model as xm

    def xla_rank():
        return int(xm.get_ordinal())
    """)
    assert len(findings(code, "XLA501")) == 1
