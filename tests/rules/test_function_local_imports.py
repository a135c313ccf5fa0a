"""A name an import binds inside one function is not bound in another (held-out 56's control:
``import torch_xla.distributed.xla_backend`` in ``_init_xla()`` bound ``torch_xla`` there only,
and XLA501's safe fix in ``_get_device()`` wrote ``torch_xla.device()`` with no import: a
NameError on the XLA path). A fix imports what it writes unless the module level binds it."""

import ast

from tests.helpers import findings, fixed, src

CONTROL = src("""
import torch
import torch.distributed as dist


def _init_xla():
    import torch_xla.distributed.xla_backend  # noqa: F401
    dist.init_process_group(backend="xla", init_method="xla://")


def _get_device(backend):
    if backend == "xla":
        import torch_xla.core.xla_model as xm
        return xm.xla_device()
    return torch.device("cuda")
""")


def _unbound_torch_xla(code: str) -> list[int]:
    """Lines of ``get_device`` using ``torch_xla.`` with no import of it in the module or the
    function."""
    tree = ast.parse(code)
    module_level = any(
        isinstance(n, ast.Import)
        and any(a.name.split(".")[0] == "torch_xla" and not a.asname for a in n.names)
        for n in tree.body
    )
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_get_device")
    local = any(
        isinstance(n, ast.Import)
        and any(a.name.split(".")[0] == "torch_xla" and not a.asname for a in n.names)
        for n in ast.walk(fn)
    )
    uses = [
        n.lineno
        for n in ast.walk(fn)
        if isinstance(n, ast.Name) and n.id == "torch_xla" and isinstance(n.ctx, ast.Load)
    ]
    return [] if module_level or local else uses


def test_the_fix_imports_what_it_writes_and_waits_for_review():
    (f,) = findings(CONTROL, "XLA501")
    assert f.fix is not None and not f.fix.safe  # a module-level torch_xla import: review
    out = fixed(CONTROL, "XLA501", unsafe=True)
    assert "torch_xla.device()" in out
    assert _unbound_torch_xla(out) == []
    assert fixed(CONTROL, "XLA501") == CONTROL  # Convert leaves it


def test_a_module_level_import_is_used_as_it_is():
    code = CONTROL.replace("import torch\n", "import torch\nimport torch_xla\n", 1)
    (f,) = findings(code, "XLA501")
    assert f.fix is not None and f.fix.safe
    assert _unbound_torch_xla(fixed(code, "XLA501")) == []
