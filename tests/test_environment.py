"""The interpreter metadata reader (engine/environment.py) on layouts other than a POSIX
venv; it reads files only, so a planted FIFO or a missing interpreter cannot hang it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from xla_lens.engine import environment

from tests.fake_env import fake_venv


def dist_info(site: Path, name: str, version: str) -> None:
    dist = site / f"{name}-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_windows_venv_layout(tmp_path: Path) -> None:
    (tmp_path / "pyvenv.cfg").write_text("home = C:\\Python311\nversion = 3.11.7\n")
    dist_info(tmp_path / "Lib" / "site-packages", "torch_xla", "1.13.1")
    exe = tmp_path / "Scripts" / "python.exe"
    assert environment.installed_version(str(exe), "torch_xla") == "1.13.1"


def test_base_install_prefix_layout(tmp_path: Path) -> None:
    # No pyvenv.cfg: <prefix>/bin/python3.11 imports from <prefix>/lib/python3.11/site-packages.
    exe = tmp_path / "bin" / "python3.11"
    dist_info(tmp_path / "lib" / "python3.11" / "site-packages", "torch_xla", "2.4.0")
    dist_info(tmp_path / "lib" / "python3.10" / "site-packages", "torch_xla", "2.9.0")
    assert environment.installed_version(str(exe), "torch_xla") == "2.4.0"


def test_venv_with_system_site_packages_falls_back_to_home(tmp_path: Path) -> None:
    base = tmp_path / "base"
    dist_info(base / "lib" / "python3.11" / "site-packages", "torch_xla", "2.5.0")
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text(
        f"home = {base / 'bin'}\ninclude-system-site-packages = true\nversion = 3.11.2\n"
    )
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    assert environment.installed_version(str(venv / "bin" / "python"), "torch_xla") == "2.5.0"
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\nversion = 3.11.2\n")
    assert environment.installed_version(str(venv / "bin" / "python"), "torch_xla") is None


def test_egg_info_and_name_normalisation(tmp_path: Path) -> None:
    fake_venv(tmp_path, None)
    site = next((tmp_path / "lib").glob("python*/site-packages"))
    egg = site / "Torch-XLA-2.1.0.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: torch-xla\nVersion: 2.1.0\n")
    assert environment.installed_version(str(tmp_path / "bin" / "python"), "torch_xla") == "2.1.0"


@pytest.mark.timeout(20)
def test_a_fifo_planted_as_metadata_does_not_hang(tmp_path: Path) -> None:
    fake_venv(tmp_path, None)
    site = next((tmp_path / "lib").glob("python*/site-packages"))
    (site / "torch_xla-9.9.dist-info").mkdir()
    os.mkfifo(site / "torch_xla-9.9.dist-info" / "METADATA")
    assert environment.installed_version(str(tmp_path / "bin" / "python"), "torch_xla") is None


def test_missing_interpreter_means_no_version(tmp_path: Path) -> None:
    assert environment.installed_version(str(tmp_path / "nope" / "python"), "torch_xla") is None
    assert environment.installed_version("no-such-python-anywhere", "torch_xla") is None
