"""The imports a fix adds never rebind a name the script already uses: a fix's ``import
torch_xla.core.xla_model as xm`` over another module's ``xm`` would have changed what every
``xm.`` call of it runs (DCL, held-out 126, first met it with ``torch_xla_py``, torch_xla's
2019 package, which is now read as the module it became)."""

import ast

from xla_lens.semantic.emitter import Emitter
from xla_lens.semantic.model import ScriptModel

from tests.helpers import fixed, src


def _emitter(code: str) -> Emitter:
    text = src(code)
    return Emitter(ScriptModel(text, ast.parse(text), "<script>"))


def test_the_conventional_alias_is_used_when_free_or_already_that_module():
    assert _emitter("import torch\n").xm == "xm"
    assert _emitter("import torch_xla.core.xla_model as xm\n").xm == "xm"
    assert _emitter("import torch_xla.core.xla_model as X\n").xm == "X"


def test_an_alias_bound_to_something_else_is_not_rebound():
    e = _emitter("import mylib.xla_model as xm\nxm_ = 1\n")
    assert e.xm == "xm__"
    assert [op.statement for op in e.imports] == ["import torch_xla.core.xla_model as xm__"]
    assert _emitter("def pl():\n    pass\n").pl == "pl_"


def test_torch_xla_py_is_read_as_the_module_it_became():
    # held-out 148: a second ``import torch_xla.core.xla_model as xm_`` beside the 2019
    # package's failed where the script ran (no torch_xla.core then); XLA501 reports the old
    # import for 2.9 instead.
    e = _emitter("import torch_xla_py.xla_model as xm\n")
    assert e.xm == "xm" and list(e.imports) == []


def test_a_fix_leaves_the_scripts_own_xm_alone():
    code = """
    import torch
    import metrics.extended as xm

    device = torch.device("cuda")
    model = torch.nn.Linear(2, 2).to(device)
    xm.report(model)
    """
    out = fixed(code, "XLA101", target="legacy")
    assert "import metrics.extended as xm\n" in out and "xm.report(model)" in out
    assert "import torch_xla.core.xla_model as xm_\n" in out
    assert "device = xm_.xla_device()" in out
