"""Bad input through the real CLI (`python -m xla_lens check|fix` as a subprocess).

Each case asserts the exit code (2 when a file cannot be read or parsed, 0/1 otherwise),
exactly one line about the file on stderr, no traceback, and that `fix` leaves a file it
could not parse byte-identical and not rewritten (same mtime, no temporary files left).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CLI_TIMEOUT = 120


def xla_lens(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xla_lens", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(folder))] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def about(stderr: str, name: str) -> list[str]:
    return [line for line in stderr.splitlines() if name in line]


# name -> (file content writer, expected fragment of the one-line message)
def _non_utf8(p: Path) -> None:
    p.write_bytes(b"import torch\nname = '\xff\xfe caf\xe9'\n")


def _binary(p: Path) -> None:
    p.write_bytes(bytes(range(256)) * 64)


def _deep_parens(p: Path) -> None:
    p.write_text("x = " + "(" * 5000 + "\n", encoding="utf-8")


def _deep_sum(p: Path) -> None:
    # Valid for the tokenizer (no brackets), far too deep for the parser's recursion.
    p.write_text("import torch\nx = " + "-" * 100_000 + "1\n", encoding="utf-8")


def _lone_bracket(p: Path) -> None:
    p.write_text('import torch\nd = torch.device("cuda"\n', encoding="utf-8")


def _null_in_text(p: Path) -> None:
    p.write_bytes(b"import torch\n# \x00\n")


BAD = {
    "non_utf8": (_non_utf8, "not valid UTF-8"),
    "binary": (_binary, "binary"),
    "deep_parens": (_deep_parens, "too many nested parentheses"),
    "deep_unary": (_deep_sum, "too deeply nested"),
    "unbalanced": (_lone_bracket, "syntax error"),
    "nul_byte": (_null_in_text, "binary"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_unreadable_or_invalid_file_is_one_clean_message_and_never_fixed(
    tmp_path: Path, case: str
) -> None:
    write, fragment = BAD[case]
    target = tmp_path / f"{case}.py"
    write(target)
    before = snapshot(tmp_path)

    check = xla_lens("check", "--target", "modern", target.name, cwd=tmp_path)
    assert check.returncode == 2, check
    assert "Traceback" not in check.stderr
    (line,) = about(check.stderr, target.name)
    assert line.startswith("xla-lens: ") and fragment in line, line

    fix = xla_lens("fix", "--target", "modern", target.name, cwd=tmp_path)
    assert fix.returncode == 2, fix
    assert "Traceback" not in fix.stderr
    (line,) = about(fix.stderr, target.name)
    assert line.startswith("xla-lens: ") and fragment in line, line
    assert snapshot(tmp_path) == before, "fix touched a file it could not parse"


def test_a_bad_file_does_not_stop_the_good_ones(tmp_path: Path) -> None:
    _non_utf8(tmp_path / "a_bad.py")
    (tmp_path / "b_good.py").write_text('import torch\nd = torch.device("cuda")\n')
    check = xla_lens("check", "--target", "modern", ".", cwd=tmp_path)
    # The unreadable file makes the run an error, yet the good file is still reported.
    assert check.returncode == 2
    assert "b_good.py:2:5: XLA101" in check.stdout
    fix = xla_lens("fix", "--target", "modern", ".", cwd=tmp_path)
    assert fix.returncode == 2
    assert "torch_xla.device()" in (tmp_path / "b_good.py").read_text()
    assert (tmp_path / "a_bad.py").read_bytes() == b"import torch\nname = '\xff\xfe caf\xe9'\n"


@pytest.mark.parametrize(
    "content",
    ["", "# only a comment\n# and another\n", "\n\n\n", "\ufeff", "#!/usr/bin/env python\n"],
)
def test_empty_and_comment_only_files_are_clean(tmp_path: Path, content: str) -> None:
    target = tmp_path / "empty.py"
    target.write_text(content, encoding="utf-8")
    before = snapshot(tmp_path)
    for args in (["check"], ["fix"], ["fix", "--diff"]):
        run = xla_lens(*args, "--target", "modern", target.name, cwd=tmp_path)
        assert run.returncode == 0, run
        assert "Traceback" not in run.stderr
        assert not about(run.stderr, "empty.py")
    assert snapshot(tmp_path) == before


def test_five_megabyte_script(tmp_path: Path) -> None:
    target = tmp_path / "big.py"
    body = "".join(f"value_{i} = {i} * 2  # padding to make the file big\n" for i in range(100_000))
    target.write_text(f"import torch\n{body}d = torch.device('cuda')\n", encoding="utf-8")
    assert target.stat().st_size > 5_000_000
    check = xla_lens("check", "--target", "modern", target.name, cwd=tmp_path)
    assert check.returncode == 1, check
    assert f"big.py:{100_000 + 2}:5: XLA101" in check.stdout
    assert "Traceback" not in check.stderr


def test_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "huge.py"
    with target.open("wb") as fh:
        fh.truncate(21 * 1024 * 1024)  # sparse: costs no disk
    before = snapshot(tmp_path)
    for command in ("check", "fix"):
        run = xla_lens(command, "--target", "modern", target.name, cwd=tmp_path)
        assert run.returncode == 2
        (line,) = about(run.stderr, "huge.py")
        assert "too large" in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["check", "fix"])
def test_deep_but_parseable_nesting_is_not_a_crash(tmp_path: Path, command: str) -> None:
    # 150 nested lists pass the stdlib parser, so the finding is reported, but libcst's
    # recursive visitor would overflow on them: `fix` must decline, not crash.
    source = "import torch\nd = torch.device('cuda')\nx = " + "[" * 150 + "]" * 150 + "\n"
    target = tmp_path / "nested.py"
    target.write_text(source, encoding="utf-8")
    run = xla_lens(command, "--target", "modern", target.name, cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert "RecursionError" not in run.stderr
    assert run.returncode in (0, 1)
    assert target.read_text(encoding="utf-8") == source


def test_directory_with_a_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "loop.py").symlink_to("loop.py")
    (tmp_path / "dangling.py").symlink_to("missing/nowhere.py")
    (tmp_path / "ok.py").write_text("x = 1\n")
    for command in ("check", "fix"):
        run = xla_lens(command, "--target", "modern", ".", cwd=tmp_path)
        assert run.returncode == 2, run
        assert "Traceback" not in run.stderr
        for name in ("loop.py", "dangling.py"):
            (line,) = about(run.stderr, name)
            assert "symbolic link" in line, line
    assert (tmp_path / "loop.py").is_symlink()


def test_directory_with_a_fifo_does_not_hang(tmp_path: Path) -> None:
    # Reading a FIFO blocks until someone writes: found by walking a folder it is skipped.
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "ok.py").write_text('import torch\nd = torch.device("cuda")\n')
    run = xla_lens("check", "--target", "modern", ".", cwd=tmp_path)
    assert run.returncode == 1, run
    assert "ok.py:2:5: XLA101" in run.stdout
    assert "pipe.py" not in run.stdout + run.stderr


def test_endless_device_file_is_refused(tmp_path: Path) -> None:
    # st_size says 0 for /dev/zero: it is refused as a device before anything is read.
    run = xla_lens("check", "--target", "modern", "/dev/zero", cwd=tmp_path)
    assert run.returncode == 2
    assert "not a regular file" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="running as root: chmod 000 does not stop root from reading the file",
)
@pytest.mark.parametrize("command", ["check", "fix"])
def test_unreadable_file(tmp_path: Path, command: str) -> None:
    target = tmp_path / "secret.py"
    target.write_text('import torch\nd = torch.device("cuda")\n')
    target.chmod(0)
    try:
        run = xla_lens(command, "--target", "modern", ".", cwd=tmp_path)
    finally:
        target.chmod(0o644)
    assert run.returncode == 2
    (line,) = about(run.stderr, "secret.py")
    assert "cannot read" in line and "Permission denied" in line
    assert "Traceback" not in run.stderr
    assert target.read_text() == 'import torch\nd = torch.device("cuda")\n'


def _crlf_bom(p: Path) -> None:
    p.write_bytes(b'\xef\xbb\xbfimport torch\r\n\r\nd = torch.device("cuda")\r\n')


def _tabs(p: Path) -> None:
    p.write_bytes(b'import torch\n\n\ndef f():\n\td = torch.device("cuda")\n\treturn d\n')


@pytest.mark.parametrize("write", [_crlf_bom, _tabs], ids=["crlf-bom", "tabs"])
def test_fix_on_disk_keeps_bom_crlf_and_tabs(tmp_path: Path, write: Callable[[Path], None]) -> None:
    target = tmp_path / "script.py"
    write(target)
    before = target.read_bytes()
    run = xla_lens("fix", "--target", "modern", target.name, cwd=tmp_path)
    assert run.returncode in (0, 1), run
    after = target.read_bytes()
    assert after != before and b"torch_xla.device()" in after
    assert after.startswith(b"\xef\xbb\xbf") == before.startswith(b"\xef\xbb\xbf")
    assert after.count(b"\xef\xbb\xbf") == before.count(b"\xef\xbb\xbf")
    if b"\r\n" in before:
        assert after.count(b"\n") == after.count(b"\r\n"), "a bare LF crept into a CRLF file"
    if b"\t" in before:
        assert b"\n\td = torch_xla.device()\n\treturn d\n" in after
    assert [p.name for p in tmp_path.iterdir()] == ["script.py"], "temporary file left behind"
