"""``t.ndimension()`` is the tensor's rank, a Python int read from its metadata (like
``t.dim()``): a branch on it syncs nothing. Held-out 177's super-resolution helper
``convert_image`` (``if img.ndimension() == 3:``), called every step with a device tensor, was
reported by XLA401 as "an if testing a device tensor"."""

import ast

from xla_lens.engine.analysis import parse
from xla_lens.semantic.value_kinds import DEV, NUM
from xla_lens.semantic.value_places import Places

from tests.helpers import src

HELPER = src("""
def convert_image(img):
    if img.METHOD() == 3:
        return img
    return img
""")


def _kinds(method: str) -> frozenset:
    model = parse(HELPER.replace("METHOD", method))
    fn = model.tree.body[0]
    test = fn.body[0].test.left  # type: ignore[attr-defined]
    assert isinstance(test, ast.Call)
    return Places(model).value(test, fn, {"img": frozenset({DEV})})


def test_the_rank_of_a_device_tensor_is_a_host_number():
    assert _kinds("ndimension") == frozenset({NUM})
    assert _kinds("dim") == frozenset({NUM})


def test_a_value_of_a_device_tensor_stays_on_the_device():
    assert _kinds("mean") == frozenset({DEV})
