"""`xla-lens fix` on a writable file in a folder the user may not create files in (a shared
checkout, a read-only parent): written in place, as an editor does, instead of refused."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.cli.test_fix_writeback import CUDA, FIXED_MARK, IS_ROOT, fix, leftovers


def test_no_temporary_file_allowed_writes_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "train.py"
    script.write_text(CUDA)
    inode = script.stat().st_ino

    def no_new_files(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", no_new_files)  # what a 0555 folder does
    code, out, err = fix(capsys, script)
    monkeypatch.undo()
    assert code == 0, err
    assert FIXED_MARK in script.read_text()
    assert script.stat().st_ino == inode
    assert "1 file changed" in out + err
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(IS_ROOT, reason="root may create files in a 0555 folder")
def test_read_only_folder_for_real(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    script = folder / "train.py"
    script.write_text(CUDA)
    folder.chmod(0o555)
    try:
        code, out, err = fix(capsys, script)
    finally:
        os.chmod(folder, 0o755)
    assert code == 0, err
    assert FIXED_MARK in script.read_text()
