"""XLA405 on a workspace module imported at the script's top that imports a CUDA-only library
at its own top (FastChat's flash-attn monkey patch, held-out 38): the import fails on an XLA
host before the script starts, whatever its options say."""

from xla_lens.engine import analyze

from tests.helpers import src

PATCH = """
import torch
from flash_attn.flash_attn_interface import flash_attn_varlen_qkvpacked_func


def replace_attn():
    torch.nn.functional.scaled_dot_product_attention = flash_attn_varlen_qkvpacked_func
"""

SCRIPT = """
import torch
from {module} import replace_attn


def train(use_flash):
    if use_flash:
        replace_attn()
    model = torch.nn.Linear(4, 1).cuda()
    return model
"""


def _found(tmp_path, patch: str, module: str = "flash_patch") -> list:
    (tmp_path / "flash_patch.py").write_text(src(patch), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(src(SCRIPT.replace("{module}", module)), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    return [f for f in result.findings if f.code == "XLA405" and "imports" in f.message]


def test_an_imported_sibling_that_imports_flash_attn_at_its_top(tmp_path):
    (f,) = _found(tmp_path, PATCH)
    assert "flash_patch.py, which imports flash_attn at its top (line 2)" in f.message
    assert f.fix is None and "try/except ImportError" in f.manual


def test_a_guarded_library_import_is_the_modules_own_choice(tmp_path):
    guarded = PATCH.replace(
        "from flash_attn.flash_attn_interface import flash_attn_varlen_qkvpacked_func\n",
        "try:\n    from flash_attn.flash_attn_interface import flash_attn_varlen_qkvpacked_func\n"
        "except ImportError:\n    flash_attn_varlen_qkvpacked_func = None\n",
    )
    assert _found(tmp_path, guarded) == []
