"""`xla-lens fix` and the data around the file: another program's write, symbolic and hard
links, owner, mode, extended attributes, read-only files, failed writes, FIFOs."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from xla_lens.cli import commands, main

CUDA = "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n"
FIXED_MARK = "torch_xla.device()"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def fix(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, str, str]:
    code = main(["fix", "--target", "modern", *map(str, paths)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(CUDA)
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".xla-lens"))


# --- another program writes while fix works ---------------------------------------------------


def test_a_save_between_read_and_write_is_kept(
    script: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = CUDA + "# saved by the editor meanwhile\n"
    real_fix_source = commands.fix_source

    def fix_source_while_editor_saves(*args, **kwargs):
        outcome = real_fix_source(*args, **kwargs)
        script.write_text(theirs)
        return outcome

    monkeypatch.setattr(commands, "fix_source", fix_source_while_editor_saves)
    code, out, err = fix(capsys, script)
    assert script.read_text() == theirs, "the other program's edit was lost"
    assert code == 2
    assert "changed on disk by another program" in err and "left untouched" in err
    assert "0 files changed" in err
    assert "fixed" not in out


def test_a_same_size_same_mtime_save_is_noticed_too(
    script: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = CUDA.replace("(2, 2)", "(3, 3)")
    assert len(theirs) == len(CUDA)
    real_fix_source = commands.fix_source

    def fix_source_while_editor_saves(*args, **kwargs):
        outcome = real_fix_source(*args, **kwargs)
        st = script.stat()
        with open(script, "r+") as fh:  # same inode, same size, mtime put back
            fh.write(theirs)
        os.utime(script, ns=(st.st_atime_ns, st.st_mtime_ns))
        return outcome

    monkeypatch.setattr(commands, "fix_source", fix_source_while_editor_saves)
    code, _, err = fix(capsys, script)
    assert script.read_text() == theirs
    assert code == 2 and "changed on disk" in err


def test_a_save_while_the_temporary_file_is_written_is_kept(
    script: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The last check runs right before the rename, after the new file is complete.
    from xla_lens.cli import writeback

    theirs = CUDA + "x = 1\n"
    real_copy = writeback._copy_metadata

    def copy_while_editor_saves(fd, target, st):
        real_copy(fd, target, st)
        script.write_text(theirs)

    monkeypatch.setattr(writeback, "_copy_metadata", copy_while_editor_saves)
    code, _, err = fix(capsys, script)
    assert script.read_text() == theirs
    assert code == 2 and "changed on disk" in err
    assert leftovers(script.parent) == []


# --- links --------------------------------------------------------------------------------------


def test_symlink_is_written_through_to_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "real" / "train.py"
    real.parent.mkdir()
    real.write_text(CUDA)
    link = tmp_path / "link.py"
    link.symlink_to(Path("real") / "train.py")
    code, out, err = fix(capsys, link)
    assert code == 0, err
    assert link.is_symlink(), "the link was replaced by a regular file"
    assert os.readlink(link) == str(Path("real") / "train.py")
    assert FIXED_MARK in real.read_text()
    assert f"fixed {link} (through the link, into {real})" in out
    assert leftovers(tmp_path) == [] and leftovers(real.parent) == []


def test_fixing_a_folder_never_writes_through_a_link_out_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "elsewhere" / "shared.py"
    outside.parent.mkdir()
    outside.write_text(CUDA)
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(CUDA)
    (project / "shared.py").symlink_to(outside)
    (project / "inside.py").symlink_to("train.py")  # a link inside the folder is fine
    code, out, err = fix(capsys, project)
    assert outside.read_text() == CUDA, "fix wrote outside the folder it was given"
    assert FIXED_MARK in (project / "train.py").read_text()
    assert f"{project / 'shared.py'}: skipped, a link to {outside} outside the folder" in err
    assert code == 0, err
    # Named on its own, the linked file is the user's explicit choice.
    code, out, err = fix(capsys, project / "shared.py")
    assert FIXED_MARK in outside.read_text()


def test_hard_links_stay_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = tmp_path / "a.py"
    first.write_text(CUDA)
    second = tmp_path / "b.py"
    os.link(first, second)
    inode = first.stat().st_ino
    code, _, err = fix(capsys, first)
    assert code == 0, err
    assert first.stat().st_ino == inode == second.stat().st_ino
    assert first.stat().st_nlink == 2
    assert FIXED_MARK in second.read_text()
    assert leftovers(tmp_path) == []


# --- metadata ---------------------------------------------------------------------------------


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
def test_owner_and_group_are_kept(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.chown(script, 12345, 23456)
    script.chmod(0o4755)
    code, _, err = fix(capsys, script)
    assert code == 0, err
    st = script.stat()
    assert (st.st_uid, st.st_gid) == (12345, 23456)
    assert stat.S_IMODE(st.st_mode) == 0o4755, "chown after chmod would have cleared setuid"
    assert FIXED_MARK in script.read_text()


def test_extended_attributes_and_mode_are_kept(
    script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not hasattr(os, "setxattr"):
        pytest.skip("no extended attributes on this platform")
    try:
        os.setxattr(script, "user.xla_lens_test", b"keep me")
    except OSError as exc:
        pytest.skip(f"this filesystem has no user xattrs: {exc}")
    script.chmod(0o6754)
    code, _, err = fix(capsys, script)
    assert code == 0, err
    assert os.getxattr(script, "user.xla_lens_test") == b"keep me"
    assert stat.S_IMODE(script.stat().st_mode) == 0o6754
    assert FIXED_MARK in script.read_text()


def test_read_only_file_is_left_untouched(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script.chmod(0o444)
    try:
        code, out, err = fix(capsys, script)
    finally:
        script.chmod(0o644)
    assert script.read_text() == CUDA
    assert code == 2
    assert f"{script}: read-only, left untouched" in err
    assert "0 files changed" in err and "fixed" not in out


# --- failed writes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "text"),
    [(errno.ENOSPC, "No space left on device"), (errno.EACCES, "Permission denied")],
)
def test_failed_write_is_not_counted_as_changed(
    script: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    text: str,
) -> None:
    def failing_replace(src, dst, *args, **kwargs):
        raise OSError(code, text)

    monkeypatch.setattr(os, "replace", failing_replace)
    exit_code, out, err = fix(capsys, script)
    monkeypatch.undo()
    assert exit_code == 2
    assert f"{script}: cannot write: {text}" in err
    assert "0 files changed" in err, err
    assert "1 file changed" not in err and "fixed" not in out
    assert script.read_text() == CUDA
    assert leftovers(script.parent) == []


@pytest.mark.parametrize("reservation_fails", [True, False])
def test_full_disk_during_an_in_place_write_changes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reservation_fails: bool,
) -> None:
    first = tmp_path / "a.py"
    first.write_text(CUDA)
    os.link(first, tmp_path / "b.py")  # hard links: written in place

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if reservation_fails:
        monkeypatch.setattr(os, "posix_fallocate", no_space, raising=False)
    monkeypatch.setattr(os, "write", no_space)
    exit_code, _, err = fix(capsys, first)
    monkeypatch.undo()
    assert exit_code == 2
    assert "No space left on device" in err and "0 files changed" in err
    assert first.read_text() == CUDA


# --- not a regular file -------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("command", ["check", "fix"])
def test_fifo_given_explicitly_is_refused_without_hanging(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    (tmp_path / "ok.py").write_text(CUDA)
    run = subprocess.run(
        [sys.executable, "-m", "xla_lens", command, "--target", "modern", "pipe.py", "ok.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 2, run
    lines = [line for line in run.stderr.splitlines() if "pipe.py" in line]
    assert lines == ["xla-lens: pipe.py: a named pipe (FIFO), not a regular file; not read"]
    assert "Traceback" not in run.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
