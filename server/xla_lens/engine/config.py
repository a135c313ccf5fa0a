"""Settings: target dialect, rule selection and severities, from pyproject.toml,
the command line or the editor, plus resolution of ``target = "auto"``."""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from ..rules.base import Severity, Target
from ..semantic.diskread import read_regular
from .environment import installed_version

TargetSetting = Literal["legacy", "modern", "auto"]
TARGETS = ("legacy", "modern", "auto")
PYPROJECT_MAX_BYTES = 4 * 1024 * 1024


class ConfigError(ValueError):
    """A setting has a value xla-lens cannot use; the message says which and why."""


@dataclass(frozen=True)
class Settings:
    target: TargetSetting = "auto"
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    interpreter: str | None = None

    def __hash__(self) -> int:
        return hash(
            (
                self.target,
                self.select,
                self.ignore,
                tuple(sorted(self.severity.items())),
                self.interpreter,
            )
        )

    def enabled(self, code: str) -> bool:
        if self.select and not any(code.startswith(s) for s in self.select):
            return False
        return not any(code.startswith(s) for s in self.ignore)

    def merged(self, **overrides: Any) -> Settings:
        clean = {k: v for k, v in overrides.items() if v is not None}
        return replace(self, **clean)


def parse_codes(value: Any, what: str) -> tuple[str, ...]:
    """``"XLA1,XLA401"`` or ``["XLA1", "XLA401"]`` → upper-case prefixes."""
    if value is None:
        return ()
    if isinstance(value, str):
        items = [v for v in value.replace(" ", ",").split(",") if v]
    elif isinstance(value, list | tuple):
        items = [str(v) for v in value]
    else:
        raise ConfigError(f"{what} must be a list of rule codes, not {value!r}")
    codes = tuple(v.strip().upper() for v in items if v.strip())
    for c in codes:
        if not (c.startswith("XLA") and c[3:].isdigit()) and c != "XLA":
            raise ConfigError(f"{what}: {c!r} is not a rule code or prefix (e.g. XLA101, XLA4)")
    return codes


def parse_target(value: Any) -> TargetSetting:
    if value is None:
        return "auto"
    v = str(value).strip().lower()
    if v not in TARGETS:
        raise ConfigError(f"target must be one of legacy, modern, auto (got {value!r})")
    return v  # type: ignore[return-value]


def parse_severity(value: Any) -> dict[str, Severity]:
    if not value:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"severity must map rule codes to levels, not {value!r}")
    out = {}
    for code, level in value.items():
        try:
            out[str(code).upper()] = Severity.parse(str(level))
        except ValueError as exc:
            raise ConfigError(f"severity for {code}: {exc}") from None
    return out


def settings_from_mapping(data: dict[str, Any], base: Settings | None = None) -> Settings:
    base = base or Settings()
    return Settings(
        target=parse_target(data["target"]) if "target" in data else base.target,
        select=parse_codes(data["select"], "select") if "select" in data else base.select,
        ignore=parse_codes(data["ignore"], "ignore") if "ignore" in data else base.ignore,
        severity=parse_severity(data["severity"]) if "severity" in data else base.severity,
        interpreter=data.get("interpreter") or base.interpreter,
    )


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else start.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=64)
def _load_pyproject(path: str, mtime: float) -> dict[str, Any]:
    try:
        # Bounded and non-blocking: a pyproject.toml linked to /proc/kmsg or a FIFO swapped
        # in after the is_file() check would otherwise hang check, fix and the server.
        data = tomllib.loads(read_regular(path, PYPROJECT_MAX_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read [tool.xla-lens]: {exc}") from None
    section = data.get("tool", {}).get("xla-lens", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.xla-lens] must be a table")
    return section


def settings_for_path(path: Path, base: Settings | None = None) -> Settings:
    """Settings from the nearest pyproject.toml above ``path`` layered on ``base``."""
    pyproject = find_pyproject(path)
    if pyproject is None:
        return base or Settings()
    section = _load_pyproject(str(pyproject), pyproject.stat().st_mtime)
    return settings_from_mapping(_anchor_interpreter(section, pyproject.parent), base)


def _anchor_interpreter(section: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A relative ``interpreter`` in pyproject.toml means relative to that file, not to
    wherever xla-lens happens to be started (a bare name stays a PATH lookup)."""
    value = section.get("interpreter")
    if not isinstance(value, str) or not any(sep in value for sep in ("/", "\\")):
        return section
    path = Path(value).expanduser()
    if path.is_absolute():
        return section
    return {**section, "interpreter": str(folder / path)}


# --- target resolution ------------------------------------------------------------------


def torch_xla_version(interpreter: str) -> str | None:
    """The torch_xla version installed for ``interpreter``, read from its package metadata
    on disk. The interpreter is never run: it may be named by the workspace being checked."""
    return installed_version(interpreter, "torch_xla")


def target_for_version(version: str | None) -> Target:
    if not version:
        return "modern"
    try:
        major, minor = (int(p) for p in version.split("+")[0].split(".")[:2])
    except ValueError:
        return "modern"
    # torch_xla.device()/torch_xla.sync() arrived in 2.5; before that the guide's
    # xm.* API is the one every release has.
    return "legacy" if (major, minor) < (2, 5) else "modern"


def resolve_target(settings: Settings) -> Target:
    if settings.target != "auto":
        return settings.target  # type: ignore[return-value]
    interpreter = settings.interpreter or sys.executable
    return target_for_version(torch_xla_version(interpreter))
