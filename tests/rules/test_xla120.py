"""XLA120: a CUDA extension compiled when a module is imported, named at the script's import
that runs it (or at the script's own build)."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_calls

from tests.helpers import findings, src

CODE = "XLA120"

FUSED_ACT = """
import os
import torch
from torch.utils.cpp_extension import load

module_path = os.path.dirname(__file__)
fused = load(
    "fused",
    sources=[
        os.path.join(module_path, "fused_bias_act.cpp"),
        os.path.join(module_path, "fused_bias_act_kernel.cu"),
    ],
)


def fused_leaky_relu(x, bias):
    return fused.fused_bias_act(x, bias)
"""

UPFIRDN = """
import os
from torch.utils import cpp_extension

KERNELS = ["upfirdn2d.cpp", "upfirdn2d_kernel.cu"]
_ext = cpp_extension.load("upfirdn2d", sources=[os.path.join(os.path.dirname(__file__), k) for k in KERNELS])
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    workspace_calls.clear_cache()
    workspace.clear_cache()
    yield


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


def _found(script: Path) -> list:
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [f for f in result.findings if f.code == CODE]


def _op_package(root: Path) -> None:
    _write(
        root / "op" / "__init__.py",
        "from .fused_act import fused_leaky_relu\nfrom .upfirdn2d import _ext\n",
    )
    _write(root / "op" / "fused_act.py", FUSED_ACT)
    _write(root / "op" / "upfirdn2d.py", UPFIRDN)
    _write(root / "op" / "conv2d_gradfix.py", "import torch\n")


def test_an_import_of_a_package_that_builds_kernels_is_reported_once(tmp_path: Path):
    _op_package(tmp_path)
    _write(tmp_path / "model.py", "import torch\nfrom op import fused_leaky_relu\n")
    script = _write(
        tmp_path / "train.py",
        """
        import torch
        from op import conv2d_gradfix
        from model import Net
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 1 and f.fix is None  # 0-based: ``from op import ...``
    assert "op/fused_act.py and op/upfirdn2d.py" in f.message
    assert "op/fused_act.py line 6: load(...)" in f.message
    assert "cpp_extension.load(...)" in f.message
    assert "CUDA_HOME" in f.message and f.manual


def test_a_module_reached_through_another_module_is_followed(tmp_path: Path):
    _op_package(tmp_path)
    _write(tmp_path / "model.py", "import torch\nfrom op import fused_leaky_relu\n")
    script = _write(tmp_path / "train.py", "import torch\nfrom model import Net\n")
    (f,) = _found(script)
    assert f.span.start.line == 1


def test_the_scripts_own_build_is_reported_at_the_call():
    text = """
    from torch.utils.cpp_extension import load_inline
    ext = load_inline("ext", cpp_sources=[""], cuda_sources=["__global__ void k() {}"])
    """
    (f,) = findings(src(text), CODE)
    assert f.span.start.line == 1


@pytest.mark.parametrize(
    "module",
    [
        # A C++-only extension builds on any host.
        'from torch.utils.cpp_extension import load\next = load("e", sources=["e.cpp"])\n',
        # Built on first use, not at import.
        'from torch.utils.cpp_extension import load\ndef get():\n    return load("e", sources=["k.cu"])\n',
        # The project's own fallback when the build fails.
        'from torch.utils.cpp_extension import load\ntry:\n    ext = load("e", sources=["k.cu"])\n'
        "except Exception:\n    ext = None\n",
        # Built only where CUDA is (the page's "use instead").
        "import torch\nfrom torch.utils.cpp_extension import load\next = None\n"
        'if torch.cuda.is_available():\n    ext = load("e", sources=["k.cu"])\n',
    ],
)
def test_builds_that_cannot_stop_the_script_are_left_alone(tmp_path: Path, module: str):
    _write(tmp_path / "ext.py", module)
    script = _write(tmp_path / "train.py", "import torch\nimport ext\n")
    assert _found(script) == []


def test_a_build_where_cuda_is_missing_is_still_reported(tmp_path: Path):
    _write(
        tmp_path / "ext.py",
        "import torch\nfrom torch.utils.cpp_extension import load\n"
        'if not torch.cuda.is_available():\n    ext = load("e", sources=["k.cu"])\n',
    )
    script = _write(tmp_path / "train.py", "import torch\nimport ext\n")
    assert len(_found(script)) == 1


def test_library_imports_are_not_followed(tmp_path: Path):
    script = _write(tmp_path / "train.py", "import torch\nfrom torch.utils import cpp_extension\n")
    assert _found(script) == []


SETUP = """
from setuptools import setup, find_packages
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, CppExtension

setup(
    name="proj",
    packages=find_packages(),
    ext_modules=[
        CUDAExtension(
            name="proj.ops.voxel_op",
            sources=["proj/ops/voxel.cpp", "proj/ops/voxel_cuda.cu"],
        ),
        CppExtension("proj.ops.cpu_op", sources=["proj/ops/cpu.cpp"]),
    ],
    cmdclass={"build_ext": BuildExtension},
)
"""


def _setup_project(root: Path, voxel_import: str) -> Path:
    _write(root / "setup.py", SETUP)
    _write(root / "proj" / "__init__.py", "")
    _write(root / "proj" / "ops" / "__init__.py", "from .voxel_module import Voxelization\n")
    _write(
        root / "proj" / "ops" / "voxel_module.py",
        f"import torch\n{voxel_import}\nfrom proj.ops.cpu_op import helper\n\n"
        "class Voxelization(torch.nn.Module):\n    pass\n",
    )
    _write(root / "proj" / "model" / "__init__.py", "from .net import Net\n")
    _write(root / "proj" / "model" / "net.py", "import torch\nfrom proj.ops import Voxelization\n")
    return _write(root / "tools" / "train.py", "import torch\nfrom proj.model import Net\n")


def test_a_cuda_extension_from_the_projects_setup_py_is_reported_at_the_import(tmp_path: Path):
    """PointPillars (held-out 93): setup.py's ``CUDAExtension(name='pointpillars.ops.voxel_op')``
    imported by the ops package the model imports, four modules below the script's import."""
    script = _setup_project(tmp_path, "from proj.ops.voxel_op import hard_voxelize")
    (f,) = _found(script)
    assert f.span.start.line == 1 and f.fix is None
    assert "proj.ops.voxel_op (proj/ops/voxel_module.py line 2)" in f.message
    assert "setup.py line 8: CUDAExtension" in f.message and "cpu_op" not in f.message
    assert "never XLA ones" in f.message


def test_a_relative_import_of_the_extension_is_resolved(tmp_path: Path):
    script = _setup_project(tmp_path, "from .voxel_op import hard_voxelize")
    (f,) = _found(script)
    assert "proj.ops.voxel_op" in f.message


def test_an_extension_import_with_a_fallback_is_the_projects_choice(tmp_path: Path):
    guarded = (
        "try:\n    from proj.ops.voxel_op import hard_voxelize\n"
        "except ImportError:\n    hard_voxelize = None"
    )
    script = _setup_project(tmp_path, guarded)
    assert _found(script) == []


INPLACE_SETUP = """
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="deform_conv",
    ext_modules=[
        CUDAExtension("deform_conv_cuda", ["src/deform_conv_cuda.cpp", "src/deform_conv_kernel.cu"]),
    ],
    cmdclass={"build_ext": BuildExtension},
)
"""


def _inplace_project(root: Path, extension_import: str) -> Path:
    """aanet's layout (held-out 143): the op package builds its extension in its own folder
    (``python setup.py build_ext --inplace``), five imports below the script's ``import nets``."""
    _write(root / "nets" / "__init__.py", "from .stereo import StereoNet\n")
    _write(root / "nets" / "stereo.py", "import torch\nfrom nets.aggregation import Aggregation\n")
    _write(root / "nets" / "aggregation.py", "import torch\nfrom nets.deform import DeformBlock\n")
    _write(root / "nets" / "deform.py", "import torch\nfrom nets.deform_conv import DeformConv\n")
    _write(root / "nets" / "deform_conv" / "__init__.py", "from .deform_conv import DeformConv\n")
    _write(root / "nets" / "deform_conv" / "setup.py", INPLACE_SETUP)
    _write(
        root / "nets" / "deform_conv" / "deform_conv.py",
        f"import torch\n{extension_import}\n\nclass DeformConv(torch.nn.Module):\n    pass\n",
    )
    return _write(root / "train.py", "import torch\nimport nets\n")


def test_an_extension_an_op_folder_builds_in_place_is_found_however_deep(tmp_path: Path):
    (f,) = _found(_inplace_project(tmp_path, "from . import deform_conv_cuda"))
    assert f.span.start.line == 1 and f.fix is None
    assert "nets/deform_conv/deform_conv.py line 2: an import of deform_conv_cuda" in f.message
    assert "nets/deform_conv/setup.py line 7: CUDAExtension" in f.message


def test_an_in_place_extension_behind_a_fallback_is_the_projects_choice(tmp_path: Path):
    guarded = (
        "try:\n    from . import deform_conv_cuda\nexcept ImportError:\n    deform_conv_cuda = None"
    )
    assert _found(_inplace_project(tmp_path, guarded)) == []
    assert _found(_inplace_project(tmp_path / "other", "import math")) == []
    # Swin's shape: a module on the way imports the op package inside try/except.
    swin = _inplace_project(tmp_path / "swin", "from . import deform_conv_cuda")
    _write(
        tmp_path / "swin" / "nets" / "deform.py",
        "import torch\ntry:\n    from nets.deform_conv import DeformConv\n"
        "except ImportError:\n    DeformConv = None\n",
    )
    assert _found(swin) == []


def test_an_op_package_setup_py_above_the_importing_module_counts(tmp_path: Path):
    # held-out 149 (point-transformer): lib/pointops/setup.py builds pointops_cuda, which
    # lib/pointops/functions/pointops.py imports; the script imports the model in a function.
    _write(tmp_path / "lib" / "__init__.py", "")
    _write(tmp_path / "lib" / "pointops" / "__init__.py", "")
    _write(
        tmp_path / "lib" / "pointops" / "setup.py", INPLACE_SETUP.replace("deform_conv", "pointops")
    )
    _write(tmp_path / "lib" / "pointops" / "functions" / "__init__.py", "")
    _write(
        tmp_path / "lib" / "pointops" / "functions" / "pointops.py",
        "import torch\nimport pointops_cuda\n",
    )
    _write(tmp_path / "model.py", "import torch\nfrom lib.pointops.functions import pointops\n")
    script = _write(
        tmp_path / "train.py",
        "import torch\n\n\ndef main():\n    from model import Net\n    return Net\n",
    )
    (f,) = _found(script)
    assert f.span.start.line == 4 and "an import of pointops_cuda" in f.message
    assert "lib/pointops/setup.py" in f.message
