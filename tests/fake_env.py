"""Fake Python environments on disk: PEP 405 venv layouts with dist-info metadata, and
executables that leave a canary file behind if anything runs them."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def write_executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def fake_venv(root: Path, torch_xla: str | None, *, python: Path | None = None) -> Path:
    """A PEP 405 venv layout; ``python`` links to a real interpreter when given."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    base = Path(os.path.realpath(sys.executable))
    (root / "pyvenv.cfg").parent.mkdir(parents=True, exist_ok=True)
    (root / "pyvenv.cfg").write_text(
        f"home = {base.parent}\ninclude-system-site-packages = false\nversion = {version}.0\n"
    )
    site = root / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True)
    if torch_xla:
        dist = site / f"torch_xla-{torch_xla}.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: torch_xla\nVersion: {torch_xla}\n\nlong text\n"
        )
    exe = root / "bin" / "python"
    exe.parent.mkdir(parents=True, exist_ok=True)
    if python is not None:
        exe.symlink_to(python)
    return exe


def canary_script(canary: Path) -> str:
    return f"#!/bin/sh\necho executed > '{canary}'\n"
