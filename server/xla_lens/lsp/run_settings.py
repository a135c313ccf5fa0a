"""Settings of ``xla-lens.run``, read from the raw ``xla-lens`` section of the document's
workspace folder.

``lsp/settings.py`` keeps only the analysis keys, so the run keys are parsed here. Both shapes
clients send are accepted: nested ``{"run": {"env", "args", "steps", "device"}}`` (what the
VS Code client's middleware answers) and flat ``{"run.env": ...}`` (what a plain settings.json
section looks like); a flat key wins over the nested one. A bad value is reported and the
default used, so a typo never blocks a run.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .core import XlaLensServer
from .settings import SECTION, folder_for

DEVICES = ("auto", "CPU", "CUDA", "TPU", "NEURON")
RUN_KEYS = ("env", "args", "steps", "device")


@dataclass(frozen=True)
class RunSettings:
    interpreter: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    steps: int | None = None
    device: str = "auto"
    problems: tuple[str, ...] = ()


class PushedSettings:
    """The raw section from initializationOptions / didChangeConfiguration, for clients that
    cannot answer workspace/configuration. ``SettingsStore.invalidate`` drops unknown keys, so
    the raw payload is captured on its way in, and the original method still runs."""

    def __init__(self) -> None:
        self.raw: dict[str, Any] = {}

    def install(self, ls: XlaLensServer) -> None:
        original = ls.settings.invalidate

        def invalidate(pushed: Any = None) -> None:
            if isinstance(pushed, Mapping):
                section = pushed.get(SECTION, pushed)
                if isinstance(section, Mapping):
                    self.raw = dict(section)
            original(pushed)

        ls.settings.invalidate = invalidate  # type: ignore[method-assign]


def _run_values(raw: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    nested = raw.get("run")
    if isinstance(nested, Mapping):
        values.update({k: nested[k] for k in RUN_KEYS if k in nested})
    values.update({k: raw[f"run.{k}"] for k in RUN_KEYS if f"run.{k}" in raw})
    # An unset editor value (null / empty) means "use the default", as in settings.py.
    return {k: v for k, v in values.items() if v not in (None, "", [], {})}


def parse_run(raw: Mapping[str, Any], interpreter: str | None) -> RunSettings:
    values = _run_values(raw)
    problems: list[str] = []
    env: dict[str, str] = {}
    if "env" in values:
        if isinstance(values["env"], Mapping):
            for name, value in values["env"].items():
                if isinstance(value, str | int | float | bool):
                    env[str(name)] = str(value)
                else:
                    problems.append(f"xla-lens run.env: {name} must be a string, not {value!r}")
        else:
            problems.append(f"xla-lens run.env must map names to strings, not {values['env']!r}")
    args: list[str] = []
    if "args" in values:
        if isinstance(values["args"], list | tuple):
            args = [str(a) for a in values["args"]]
        else:
            problems.append(f"xla-lens run.args must be a list of strings, not {values['args']!r}")
    steps: int | None = None
    if "steps" in values:
        value = values["steps"]
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            steps = value
        else:
            problems.append(f"xla-lens run.steps must be a whole number >= 1, not {value!r}")
    device = "auto"
    if "device" in values:
        wanted = str(values["device"])
        match = next((d for d in DEVICES if d.lower() == wanted.lower()), None)
        if match is None and wanted.upper() == "GPU":
            match = "CUDA"
        if match is None:
            problems.append(
                f"xla-lens run.device must be one of {', '.join(DEVICES)}, not {wanted!r}"
            )
        device = match or "auto"
    return RunSettings(
        interpreter=interpreter or sys.executable,
        env=env,
        args=args,
        steps=steps,
        device=device,
        problems=tuple(problems),
    )


async def run_settings_for(ls: XlaLensServer, uri: str, pushed: PushedSettings) -> RunSettings:
    """Fetched fresh for every run: runs are rare, and a stale cache would run with old env."""
    raw: dict[str, Any] = dict(pushed.raw)
    folder = folder_for(uri, ls.folders())
    try:
        fetched = await ls._fetch_configuration(folder or uri)
    except Exception as exc:  # a client that cannot answer keeps the pushed values
        ls.log_client(f"xla-lens: workspace/configuration for the run failed: {exc}")
        fetched = None
    if isinstance(fetched, Mapping):
        raw.update({k: v for k, v in fetched.items() if v not in (None, "", [], {})})
    # The interpreter also comes from pyproject.toml, so it goes through the shared resolver.
    resolved = await ls.settings.for_document(uri, ls.folders())
    return parse_run(raw, resolved.settings.interpreter)
