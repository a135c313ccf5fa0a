"""Fixtures shared by the rule tests."""

from __future__ import annotations

import pytest
from xla_lens.semantic import workspace, workspace_callers, workspace_calls


@pytest.fixture
def fresh_workspace_caches():
    """Sibling modules read from a test's tmp_path, not from an earlier test's folder."""
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_callers.clear_cache()
    yield
