from xla_lens.rules.registry import get_rule

from tests.helpers import findings

PINS = """
import sys
import torch
from packaging import version
from distutils.version import LooseVersion
assert torch.__version__.split('.')[0] == '1'
assert torch.__version__ >= "1.6"
assert int(torch.__version__[0]) >= 1
if version.parse(torch.__version__) >= version.parse("2.0"):
    raise RuntimeError("torch 2 not supported")
if LooseVersion(torch.__version__) < LooseVersion("1.8"):
    raise RuntimeError("need 1.8")
if torch.__version__.startswith("2."):
    use_new = True
if torch.__version__.startswith("2."):
    sys.exit("old torch only")
assert torch.__version__ == "2.9.0"
assert float(torch.__version__[:3]) < 2.0
assert torch.__version__ == other
if torch.__version__ >= "2":
    print("too new")
    exit(1)
"""


def test_checks_that_stop_the_script_under_torch_2_9_are_reported():
    # held-out 130 (pytorch-retinanet): `assert torch.__version__.split('.')[0] == '1'`.
    found = findings(PINS, "XLA503")
    assert [f.span.start.line for f in found] == [4, 7, 13, 16, 18]
    assert all(f.fix is None and f.manual and "torch 2.9" in f.message for f in found)
    # "2.9.0" holds for the plain wheel only ("2.9.0+cpu" on others): not certain, not reported.


def test_a_shadowed_builtin_or_another_version_is_not_evaluated():
    code = """
    import torch
    def int(x):
        return 0
    assert int(torch.__version__[0]) == 1
    assert sys.version.split('.')[0] == '2'
    """
    assert findings(code, "XLA503") == []


def test_the_legacy_target_runs_torch_1_13_and_is_not_reported():
    assert findings(PINS, "XLA503", target="legacy") == []
    rule = get_rule("XLA503")
    assert rule is not None and not rule.has_fix and "torch.__version__" in rule.hover
