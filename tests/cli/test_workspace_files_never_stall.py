"""Files the workspace names are read without letting it stall the reader: a pyproject.toml or
a sibling module that is a FIFO swapped in after the ``is_file()`` check, or a link to
``/proc/kmsg`` (a regular file whose read blocks, for root, as CI containers run), gives a
clear error or is skipped, within seconds. Each read runs in a thread so a regression fails
the test instead of hanging it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from xla_lens.engine import config
from xla_lens.semantic import workspace

KMSG = Path("/proc/kmsg")
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
kmsg_blocks = pytest.mark.skipif(
    not (IS_ROOT and KMSG.exists()), reason="only root can open /proc/kmsg, where it blocks"
)


def finishes(fn, timeout: float = 5.0) -> tuple[bool, object]:
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(fn())
        except Exception as exc:  # the error is an acceptable outcome
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive(), (outcome[0] if outcome else None)


def unblock(fifo: Path) -> None:
    # Frees a reader a regression left blocked on the FIFO's open.
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


@pytest.fixture(autouse=True)
def fresh_caches() -> None:
    config._load_pyproject.cache_clear()
    workspace.clear_cache()


def test_pyproject_swapped_for_a_fifo_after_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "pyproject.toml"
    os.mkfifo(fifo)
    monkeypatch.setattr(config, "find_pyproject", lambda start: fifo)
    monkeypatch.setattr(Path, "stat", lambda self, **kw: os.stat(tmp_path))
    try:
        done, outcome = finishes(lambda: config.settings_for_path(tmp_path / "t.py"))
    finally:
        unblock(fifo)
    assert done, "reading a FIFO pyproject.toml blocked"
    assert isinstance(outcome, config.ConfigError) and "not a regular file" in str(outcome)


@kmsg_blocks
def test_pyproject_linked_to_proc_kmsg(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").symlink_to(KMSG)
    done, outcome = finishes(lambda: config.settings_for_path(tmp_path / "t.py"))
    assert done, "reading a pyproject.toml linked to /proc/kmsg blocked"
    assert isinstance(outcome, config.ConfigError) and "block" in str(outcome)


@kmsg_blocks
def test_sibling_module_linked_to_proc_kmsg_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "engine.py").symlink_to(KMSG)
    script = tmp_path / "train.py"
    done, outcome = finishes(
        lambda: workspace.imported_function_facts(str(script), "engine", "train_one_epoch", 0)
    )
    assert done, "reading a sibling module linked to /proc/kmsg blocked"
    assert outcome is None


def test_sibling_module_larger_than_the_limit_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The size check is on the path; the file may grow (or be replaced) before the read.
    module = tmp_path / "engine.py"
    module.write_text("def train_one_epoch():\n    pass\n" + "#" * 4096)
    monkeypatch.setattr(workspace, "MAX_BYTES", 64)
    monkeypatch.setattr(workspace, "module_file", lambda *a: module)
    facts = workspace.imported_function_facts(
        str(tmp_path / "t.py"), "engine", "train_one_epoch", 0
    )
    assert facts is None
