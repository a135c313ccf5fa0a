"""CUDA AMP imports the fixes left unused are removed with them (held-outs 149 and 150):
once XLA102 has rewritten every ``autocast()``, ``from torch.cuda.amp import autocast``
binds a name nothing reads. Only names the script read before and no longer reads go; an
import the author never used, one in a ``try``, and names still used stay."""

from xla_lens.engine import fix_source

from tests.helpers import fixed, src

SCRIPT = src("""
import torch
from torch.cuda.amp import autocast


def step(model, x):
    with autocast():
        return model(x)


def step2(model, x):
    from torch.cuda.amp import autocast as cuda_autocast

    with cuda_autocast(dtype=torch.bfloat16):
        return model(x)
""")


def test_every_use_converted_takes_the_imports_along():
    out = fixed(SCRIPT, "XLA102")
    assert "torch.cuda.amp" not in out
    assert out.count('torch.autocast("xla", dtype=torch.bfloat16)') == 2
    compile(out, "<fixed>", "exec")


def test_a_name_still_used_keeps_its_import():
    code = SCRIPT + "\n\nAUTOCAST = autocast\n"
    out = fixed(code, "XLA102")
    assert "from torch.cuda.amp import autocast\n" in out
    assert "from torch.cuda.amp import autocast as cuda_autocast" not in out


def test_only_the_converted_names_leave_a_shared_import():
    code = (
        SCRIPT.replace(
            "from torch.cuda.amp import autocast\n",
            "from torch.cuda.amp import autocast, custom_fwd\n",
        )
        + "\n\n@custom_fwd\ndef f(x):\n    return x\n"
    )
    out = fixed(code, "XLA102")
    assert "from torch.cuda.amp import custom_fwd\n" in out


def test_an_import_never_used_and_a_guarded_one_stay():
    code = SCRIPT.replace(
        "from torch.cuda.amp import autocast\n",
        "from torch.cuda.amp import autocast\nfrom torch.cuda.amp import GradScaler\n",
    ).replace(
        "    from torch.cuda.amp import autocast as cuda_autocast\n",
        "    try:\n        from torch.cuda.amp import autocast as cuda_autocast\n"
        "    except ImportError:\n        cuda_autocast = None\n",
    )
    out = fixed(code, "XLA102")
    assert "from torch.cuda.amp import GradScaler\n" in out
    assert "        from torch.cuda.amp import autocast as cuda_autocast\n" in out
    assert "\nfrom torch.cuda.amp import autocast\n" not in out


def test_the_removal_is_idempotent_through_fix_all():
    once = fix_source(SCRIPT).source
    assert fix_source(once).source == once
    assert "torch.cuda.amp" not in once
