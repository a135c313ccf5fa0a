"""The engine: parse, run rules, apply fixes (fixpoint, idempotent)."""

from .analysis import Analysis, analyze
from .config import ConfigError, Settings, resolve_target
from .fixing import FixOutcome, apply_fix, fix_source

__all__ = [
    "Analysis",
    "ConfigError",
    "FixOutcome",
    "Settings",
    "analyze",
    "apply_fix",
    "fix_source",
    "resolve_target",
]
