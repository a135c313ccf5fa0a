"""What is installed for a Python interpreter, read from disk without running it.

``target = "auto"`` needs the torch_xla version of the interpreter that will run the script.
That interpreter may be named by a workspace's pyproject.toml, i.e. by whoever wrote the
repository, so running it (even with ``-I``: a venv's ``*.pth`` files still execute) would
run their code on every ``check``. Instead the interpreter's site-packages are located the
way ``site.py`` would (PEP 405 ``pyvenv.cfg``, the ``lib/pythonX.Y`` layout, Windows'
``Lib``) and the package's ``*.dist-info/METADATA`` is read. Nothing here executes,
imports or follows a ``.pth`` line.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from functools import lru_cache
from pathlib import Path

# Enough for any METADATA header block; the description that follows is never needed.
_METADATA_BYTES = 64 * 1024
_PYTHON_NAME = re.compile(r"^python(\d+)\.(\d+)")


def locate(interpreter: str, relative_to: Path | None = None) -> Path | None:
    """``interpreter`` as a path: a bare name is looked up on PATH (a lookup, not a run),
    a relative path is taken from ``relative_to`` (or the current folder)."""
    value = os.path.expanduser(interpreter.strip())
    if not value:
        return None
    if os.sep not in value and (os.altsep is None or os.altsep not in value):
        found = shutil.which(value)
        return Path(os.path.abspath(found)) if found else None
    path = Path(value)
    if not path.is_absolute():
        path = (relative_to or Path.cwd()) / path
    # abspath, not resolve(): a venv's python is a symlink out of the venv, and the venv
    # (found next to the link) is what decides the site-packages.
    return Path(os.path.abspath(path))


def _read_pyvenv_cfg(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    text = _read_small_text(path)
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip().lower()] = value.strip()
    return values


def _find_pyvenv_cfg(executable: Path) -> Path | None:
    # PEP 405: beside the executable or one folder up (bin/ or Scripts/).
    for folder in (executable.parent, executable.parent.parent):
        candidate = folder / "pyvenv.cfg"
        if candidate.is_file():
            return candidate
    return None


def _version_hint(*names: str) -> str | None:
    """``"3.11"`` from ``python3.11``, ``3.11.7`` (pyvenv.cfg) and the like."""
    for name in names:
        m = _PYTHON_NAME.match(name) or re.match(r"^(\d+)\.(\d+)", name)
        if m:
            return f"{m.group(1)}.{m.group(2)}"
    return None


def _prefix_site_dirs(prefix: Path, version: str | None, *, debian: bool = False) -> list[Path]:
    """site-packages under one installation prefix, in sys.path order."""
    dirs: list[Path] = []
    for lib in ("lib", "lib64"):
        lib_dir = prefix / lib
        if not lib_dir.is_dir():
            continue
        try:
            versions = sorted(
                (p for p in lib_dir.iterdir() if _PYTHON_NAME.match(p.name)), reverse=True
            )
        except OSError:
            continue
        for py_dir in versions:
            if version and _version_hint(py_dir.name) != version:
                continue
            dirs.append(py_dir / "site-packages")
            if debian:
                dirs.append(py_dir / "dist-packages")
        if debian:
            dirs.append(lib_dir / "python3" / "dist-packages")
    dirs.append(prefix / "Lib" / "site-packages")  # Windows
    return dirs


def _base_site_dirs(prefix: Path, version: str | None) -> list[Path]:
    # Debian's system pip installs to /usr/local/lib/pythonX.Y/dist-packages.
    return [
        *_prefix_site_dirs(prefix / "local", version, debian=True),
        *_prefix_site_dirs(prefix, version, debian=True),
    ]


def _base_prefixes(executable: Path) -> list[Path]:
    # POSIX: <prefix>/bin/python; Windows: <prefix>/python.exe.
    return [executable.parent.parent, executable.parent]


def site_packages(executable: Path) -> list[Path]:
    """The folders ``executable`` would import third-party packages from, best first,
    found without running it. Only existing folders are returned."""
    dirs: list[Path] = []
    cfg_path = _find_pyvenv_cfg(executable)
    if cfg_path is not None:
        cfg = _read_pyvenv_cfg(cfg_path)
        version = _version_hint(
            cfg.get("version", ""), cfg.get("version_info", ""), executable.name
        )
        dirs.extend(_prefix_site_dirs(cfg_path.parent, version))
        home = cfg.get("home")
        if home and cfg.get("include-system-site-packages", "").lower() == "true":
            base = Path(home) / "python"
            for prefix in _base_prefixes(base):
                dirs.extend(_base_site_dirs(prefix, version))
    else:
        real = Path(os.path.realpath(executable))
        version = _version_hint(executable.name, real.name)
        for exe in dict.fromkeys((executable, real)):
            for prefix in _base_prefixes(exe):
                dirs.extend(_base_site_dirs(prefix, version))
        if version and sys.platform != "win32":
            # The user site (pip install --user), which a base interpreter also imports from.
            dirs.append(Path.home() / ".local" / "lib" / f"python{version}" / "site-packages")
    seen: dict[str, Path] = {}
    for d in dirs:
        real = os.path.realpath(d)  # lib64 is often a link to lib
        if real not in seen and d.is_dir():
            seen[real] = d
    return list(seen.values())


def _read_small_text(path: Path) -> str | None:
    """A regular file's first bytes; never blocks on a FIFO or device planted in its place."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _METADATA_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_version(dist: Path) -> str | None:
    if dist.name.endswith(".dist-info"):
        meta = dist / "METADATA"
    else:  # an .egg-info folder holds PKG-INFO; an .egg-info file is one
        meta = dist / "PKG-INFO" if dist.is_dir() else dist
    text = _read_small_text(meta)
    if text is None:
        return None
    for line in text.splitlines():
        if not line.strip():
            break  # end of the headers
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "version":
            return value.strip() or None
    return None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3])


@lru_cache(maxsize=64)
def _installed_in(dirs: tuple[Path, ...], _stamps: tuple[int, ...], package: str) -> str | None:
    wanted = _normalise(package) + "_"
    for folder in dirs:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        found = [
            v
            for name in names
            if _normalise(name).startswith(wanted)
            and name.endswith((".dist-info", ".egg-info"))
            and (v := _metadata_version(folder / name))
        ]
        if found:
            # Stale leftovers of an interrupted upgrade: the newest one is what pip installed last.
            return max(found, key=_version_key)
    return None


def installed_version(
    interpreter: str, package: str, relative_to: Path | None = None
) -> str | None:
    """The version of ``package`` installed for ``interpreter``, or None when it has none
    or its environment cannot be found."""
    executable = locate(interpreter, relative_to)
    if executable is None:
        return None
    dirs = tuple(site_packages(executable))
    stamps = []
    for d in dirs:
        try:
            stamps.append(d.stat().st_mtime_ns)  # an install or uninstall touches the folder
        except OSError:
            stamps.append(0)
    return _installed_in(dirs, tuple(stamps), package)
