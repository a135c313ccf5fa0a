"""Sibling modules read from disk: where ``from pkg.mod import f`` is looked for (the script's
folder, its package, a bounded climb to the project root) and the device facts of ``f``."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from xla_lens.semantic import workspace_calls
from xla_lens.semantic.workspace import (
    MAX_ASCENT,
    clear_cache,
    imported_function_facts,
    module_file,
    search_folders,
)

COMMON = """
import os
import torch
import torch.distributed as dist

def autodetect_device_type():
    if torch.cuda.is_available():
        device_type = "cuda"
    else:
        device_type = "cpu"
    return device_type

def _ranks():
    return int(os.environ.get("RANK", 0)), int(os.environ.get("LOCAL_RANK", 0))

def setup(device_type="cuda"):
    torch.manual_seed(0)
    if device_type == "cuda":
        torch.cuda.manual_seed(0)
    rank, local = _ranks()
    _bind(local)
    dist.init_process_group(backend="nccl")
    return torch.device("cuda", local)

def _bind(local):
    torch.cuda.set_device(local)

def pick():
    return "cuda" if torch.cuda.is_available() else "cpu"

def log(x):
    print(x)
"""


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``proj/{pyproject.toml, mypkg/common.py, scripts/train.py}`` (no ``__init__.py``s)."""
    clear_cache()
    root = tmp_path / "proj"
    _write(root / "pyproject.toml", "[project]\nname = 'p'\n")
    _write(root / "mypkg" / "common.py", COMMON)
    _write(root / "scripts" / "train.py", "from mypkg.common import setup\nsetup()\n")
    return root


def test_a_package_of_the_project_root_resolves_from_a_script_folder(project: Path):
    script = str(project / "scripts" / "train.py")
    assert module_file(script, "mypkg.common", 0) == project / "mypkg" / "common.py"
    # A module next to the script still wins over one higher up.
    _write(project / "scripts" / "mypkg" / "common.py", "def setup():\n    pass\n")
    assert module_file(script, "mypkg.common", 0) == project / "scripts" / "mypkg" / "common.py"


def test_the_climb_stops_at_the_project_root(tmp_path: Path, project: Path):
    # ``tmp_path/other.py`` is above the project root (pyproject.toml): never looked at.
    _write(tmp_path / "other.py", "def f():\n    pass\n")
    script = str(project / "scripts" / "train.py")
    assert module_file(script, "other", 0) is None
    assert search_folders(project / "scripts") == [project / "scripts", project]
    # A .git folder marks the root too.
    (project / "pyproject.toml").unlink()
    (project / ".git").mkdir()
    assert module_file(script, "other", 0) is None


def test_the_project_root_answer_is_cached_until_its_folder_changes(project: Path):
    assert search_folders(project / "scripts") == [project / "scripts", project]
    assert search_folders(project / "scripts") == [project / "scripts", project]
    # The marker goes: the folder's mtime changes, and the climb goes on above it.
    (project / "pyproject.toml").unlink()
    assert search_folders(project / "scripts")[:3] == [
        project / "scripts",
        project,
        project.parent,
    ]


def test_the_climb_is_bounded_without_a_project_root(tmp_path: Path):
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(MAX_ASCENT + 2)])
    folders = search_folders(deep)
    assert len(folders) == MAX_ASCENT + 1
    _write(tmp_path / "far.py", "def f():\n    pass\n")
    assert module_file(str(deep / "s.py"), "far", 0) is None
    near = deep.parents[MAX_ASCENT - 1]
    _write(near / "near.py", "def f():\n    pass\n")
    assert module_file(str(deep / "s.py"), "near", 0) == near / "near.py"


def test_device_facts_of_helpers(project: Path):
    script = str(project / "scripts" / "train.py")
    setup = imported_function_facts(script, "mypkg.common", "setup", 0)
    assert setup is not None
    # Helpers of the same module are followed (_bind), torch.manual_seed is not CUDA.
    assert setup.cuda_calls == (("torch.cuda.manual_seed", 18), ("torch.cuda.set_device", 25))
    assert setup.nccl_line == 21
    assert setup.cuda_picker_line == 0
    detect = imported_function_facts(script, "mypkg.common", "autodetect_device_type", 0)
    assert detect is not None and detect.cuda_picker_line == 6 and detect.cuda_calls == ()
    pick = imported_function_facts(script, "mypkg.common", "pick", 0)
    assert pick is not None and pick.cuda_picker_line == 28
    log = imported_function_facts(script, "mypkg.common", "log", 0)
    assert log is not None and (log.cuda_picker_line, log.cuda_calls, log.nccl_line) == (0, (), 0)


def test_a_sibling_module_is_read_not_run(project: Path):
    marker = project / "ran"
    _write(
        project / "mypkg" / "loud.py",
        f"open({str(marker)!r}, 'w').write('x')\ndef f():\n    import torch\n"
        "    torch.cuda.set_device(0)\n",
    )
    facts = imported_function_facts(str(project / "scripts" / "t.py"), "mypkg.loud", "f", 0)
    assert facts is not None and facts.cuda_calls == (("torch.cuda.set_device", 4),)
    assert not marker.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_place_of_a_module_is_skipped_without_blocking(project: Path):
    os.mkfifo(project / "mypkg" / "pipe.py")
    script = str(project / "scripts" / "t.py")
    assert module_file(script, "mypkg.pipe", 0) is None
    assert imported_function_facts(script, "mypkg.pipe", "f", 0) is None


def test_module_file_relative_import_of_the_package_itself(tmp_path, monkeypatch):
    """``from . import x`` (module "") in a package module named by a relative path: the
    package folder is ``.``, which has no name to give a ``.py`` suffix (it used to raise)."""
    from xla_lens.semantic.workspace import module_file

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "x.py").write_text("def f():\n    return 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "train_util.py").write_text("from . import y\nfrom .. import x\n")
    monkeypatch.chdir(pkg / "sub")
    assert module_file("train_util.py", "", 1) == Path("__init__.py")
    assert module_file("train_util.py", "x", 2) == (pkg / "x.py").absolute()
    monkeypatch.chdir(pkg)
    assert module_file("x.py", "", 1) == Path("__init__.py")
    assert module_file("sub/train_util.py", "x", 2) == Path("x.py")
    assert module_file(str(pkg / "sub" / "train_util.py"), "", 2) == pkg / "__init__.py"
    assert module_file(str(pkg / "sub" / "train_util.py"), "x", 2) == pkg / "x.py"


def test_an_absolute_package_import_from_inside_the_package_by_a_relative_path(
    tmp_path, monkeypatch
):
    """``from pygcn.utils import load_data`` in pygcn/train.py, checked as ``train.py`` from
    inside pygcn/ (held-out 16): the package's parent is found by climbing the absolute path."""
    pkg = tmp_path / "pygcn"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text("def load_data():\n    return 1\n")
    (pkg / "train.py").write_text("from pygcn.utils import load_data\n")
    monkeypatch.chdir(pkg)
    assert module_file("train.py", "pygcn.utils", 0) == (pkg / "utils.py").absolute()
    assert module_file("train.py", "utils", 0) == Path("utils.py")


def test_a_package_inside_a_repository_root_that_is_a_package_resolves(tmp_path: Path):
    # held-out 26 (fast-autoaugment): the repository root has an __init__.py, and
    # FastAutoAugment/train.py imports `FastAutoAugment.networks` from that root.
    root = tmp_path / "repo"
    pkg = root / "FastAutoAugment"
    (pkg / "networks").mkdir(parents=True)
    for f in (root / "__init__.py", pkg / "__init__.py", pkg / "networks" / "__init__.py"):
        f.write_text("")
    script = str(pkg / "train.py")
    assert module_file(script, "FastAutoAugment.networks", 0) == pkg / "networks" / "__init__.py"


def test_library_names_a_star_import_of_a_workspace_module_binds(tmp_path: Path):
    # held-out 29 (pytorch-deeplab-xception): train.py gets torch only through
    # `from modeling.deeplab import *`; its torch calls must still resolve.
    import ast

    from xla_lens.semantic.model import ScriptModel

    (tmp_path / "modeling").mkdir()
    (tmp_path / "modeling" / "__init__.py").write_text("")
    (tmp_path / "modeling" / "deeplab.py").write_text(
        "import torch\nimport torch.nn as nn\nfrom torch import optim\nimport _private\n"
        "from modeling.helpers import *\nclass DeepLab(nn.Module):\n    pass\n"
    )
    (tmp_path / "modeling" / "helpers.py").write_text("import numpy as np\n")
    script = tmp_path / "train.py"
    text = "from modeling.deeplab import *\nm = torch.nn.DataParallel(DeepLab()).cuda()\n"
    script.write_text(text)
    model = ScriptModel(text, ast.parse(text), str(script))
    assert model.imports["torch"] == "torch" and model.imports["nn"] == "torch.nn"
    assert model.imports["optim"] == "torch.optim" and model.imports["np"] == "numpy"
    assert "_private" not in model.imports and "DeepLab" not in model.imports
    (call,) = [c for c in model.calls if getattr(c.func, "attr", "") == "DataParallel"]
    assert model.call_name(call) == "torch.nn.DataParallel"
    limited = tmp_path / "modeling" / "deeplab.py"
    limited.write_text("__all__ = ['DeepLab']\n" + limited.read_text())
    workspace_calls.clear_cache()
    model = ScriptModel(text, ast.parse(text), str(script))
    assert "torch" not in model.imports


def test_a_package_named_like_an_ancestor_resolves_from_above_its_setup_py(tmp_path: Path):
    # GraphSAINT (held-out 123): graphsaint/setup.py marks a root, yet the script imports
    # ``graphsaint.pytorch_version.models`` as run from the repository above it.
    repo = tmp_path / "repo"
    _write(repo / "graphsaint" / "setup.py", "")
    _write(repo / "graphsaint" / "pytorch_version" / "models.py", "class M:\n    pass\n")
    script = str(repo / "graphsaint" / "pytorch_version" / "train.py")
    found = module_file(script, "graphsaint.pytorch_version.models", 0)
    assert found == repo / "graphsaint" / "pytorch_version" / "models.py"
    # A top package named like no ancestor is still looked for only where it was.
    assert module_file(script, "other.pytorch_version.models", 0) is None
