"""Modules found through the folders a script puts on sys.path itself (held-out 43, HRNet:
``import _init_paths`` inserts ``<tools>/../lib``, then ``from core.function import train``):
evaluated on the syntax tree, never run."""

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import (
    sys_path_additions,
    workspace,
    workspace_callers,
    workspace_calls,
)
from xla_lens.semantic.workspace import module_file

from tests.helpers import src

INIT_PATHS = """
import os.path as osp
import sys


def add_path(path):
    if path not in sys.path:
        sys.path.insert(0, path)


this_dir = osp.dirname(__file__)
lib_path = osp.join(this_dir, "..", "lib")
add_path(lib_path)
"""

FUNCTION = """
import torch


def train(model, loader, optimizer):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

TRAIN = """
import torch

import _init_paths
from core.function import train


def main(model, loader, optimizer):
    train(model, loader, optimizer)
"""


@pytest.fixture
def repo(tmp_path):
    for cache in (workspace, workspace_callers, workspace_calls, sys_path_additions):
        cache.clear_cache()
    (tmp_path / "tools").mkdir()
    (tmp_path / "lib" / "core").mkdir(parents=True)
    (tmp_path / "lib" / "core" / "__init__.py").write_text("")
    (tmp_path / "lib" / "core" / "function.py").write_text(src(FUNCTION))
    (tmp_path / "tools" / "_init_paths.py").write_text(src(INIT_PATHS))
    script = tmp_path / "tools" / "train.py"
    script.write_text(src(TRAIN))
    return tmp_path


def test_an_init_paths_folder_is_searched(repo):
    script = repo / "tools" / "train.py"
    assert module_file(str(script), "core.function", 0) == repo / "lib" / "core" / "function.py"
    found = [f for f in analyze(script.read_text(), str(script)).findings if f.code == "XLA118"]
    assert [f.span.start.line + 1 for f in found] == [8]
    assert "lib/core/function.py" in found[0].message


def test_without_the_path_setup_the_module_is_out_of_reach(repo):
    (repo / "tools" / "_init_paths.py").unlink()
    script = repo / "tools" / "train.py"
    assert module_file(str(script), "core.function", 0) is None


def test_the_scripts_own_append_with_pathlib(repo):
    (repo / "tools" / "_init_paths.py").unlink()
    script = repo / "tools" / "train.py"
    script.write_text(
        src(
            """
            import sys
            from pathlib import Path

            sys.path.append(str(Path(__file__).resolve().parent.parent / "lib"))
            from core.function import train
            """
        )
    )
    assert module_file(str(script), "core.function", 0) == repo / "lib" / "core" / "function.py"


def test_a_path_it_cannot_evaluate_adds_nothing(repo):
    (repo / "tools" / "_init_paths.py").write_text(
        src("import os, sys\nsys.path.insert(0, os.environ['LIB_DIR'])\n")
    )
    assert module_file(str(repo / "tools" / "train.py"), "core.function", 0) is None


def test_an_init_paths_the_script_does_not_import_changes_nothing(repo):
    script = repo / "tools" / "train.py"
    script.write_text(src(TRAIN).replace("import _init_paths\n", ""))
    assert module_file(str(script), "core.function", 0) is None
