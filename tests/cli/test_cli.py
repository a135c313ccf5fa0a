"""The xla-lens command line, run as a real subprocess on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CUDA = "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()  # keep this comment\n"
CLEAN = "import torch\n\nx = torch.zeros(2)\n"


def xla_lens(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xla_lens", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(CUDA)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_check_exit_codes_and_text(project: Path) -> None:
    found = xla_lens("check", "train.py", "--target", "modern", cwd=project)
    assert found.returncode == 1, found.stderr
    assert "train.py:3:9: XLA101" in found.stdout
    assert "fix: Replace .cuda() with .to(torch_xla.device())" in found.stdout
    clean = xla_lens("check", "clean.py", "--target", "modern", cwd=project)
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_check_json_records(project: Path) -> None:
    out = xla_lens("check", "train.py", "--format", "json", "--target", "modern", cwd=project)
    records = json.loads(out.stdout)
    assert records == [
        {
            "path": "train.py",
            "code": "XLA101",
            "severity": "warning",
            "message": records[0]["message"],
            "line": 3,
            "column": 9,
            "end_line": 3,
            "end_column": 37,
            "fix": {
                "title": "Replace .cuda() with .to(torch_xla.device())",
                "applicability": "safe",
            },
            "manual": None,
        }
    ]


def test_check_json_says_which_fixes_wait_for_review(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import argparse\n"
        "import torch\n"
        "from torch import nn\n\n"
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--device", default="cpu", help="cpu or cuda")\n'
        "args = parser.parse_args()\n"
        "model = nn.Linear(4, 1).to(args.device)\n"
        "torch.cuda.synchronize()\n"
    )
    out = xla_lens("check", "train.py", "--format", "json", "--target", "modern", cwd=tmp_path)
    fixes = {r["code"]: r["fix"] for r in json.loads(out.stdout)}
    assert fixes["XLA101"]["applicability"] == "unsafe"
    assert fixes["XLA101"]["review_reason"]  # the reason, as the text output gives it
    # The CUDA-only call's removal is safe alone, but `fix` holds it back with the device it
    # belongs with (engine/consistency.py), and `check` says so rather than "safe".
    (other,) = [f for c, f in fixes.items() if c != "XLA101"]
    assert other["applicability"] == "unsafe"
    assert other["review_reason"].startswith("Convert held this back")


def test_check_sarif_is_code_scanning_shaped(project: Path) -> None:
    out = xla_lens("check", ".", "--format", "sarif", "--target", "modern", cwd=project)
    doc = json.loads(out.stdout)
    assert doc["version"] == "2.1.0"
    (run,) = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert all({"id", "shortDescription", "helpUri"} <= set(r) for r in rules)
    (result,) = run["results"]
    assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == "XLA101"
    assert result["level"] in {"error", "warning", "note", "none"}
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "train.py", "uriBaseId": "SRCROOT"}
    assert loc["region"]["startLine"] == 3 and loc["region"]["startColumn"] == 9
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"].endswith("/")


def test_usage_and_io_errors_exit_2_without_traceback(project: Path) -> None:
    for args in (
        ["check", "missing.py"],
        ["check", "--select", "nope", "train.py"],
        ["frobnicate"],
    ):
        out = xla_lens(*args, cwd=project)
        assert out.returncode == 2, args
        assert "Traceback" not in out.stderr
    (project / "latin1.py").write_bytes(b"# caf\xe9\nx = 1\n")
    out = xla_lens("check", "latin1.py", cwd=project)
    assert out.returncode == 2 and "not valid UTF-8" in out.stderr


def test_fix_in_place_keeps_comments_and_is_idempotent(project: Path) -> None:
    out = xla_lens("fix", "train.py", "--target", "modern", cwd=project)
    assert out.returncode == 0, out.stderr
    text = (project / "train.py").read_text()
    assert text == (
        "import torch\nimport torch_xla\n\n"
        "model = torch.nn.Linear(2, 2).to(torch_xla.device())  # keep this comment\n"
    )
    again = xla_lens("fix", "train.py", "--target", "modern", cwd=project)
    assert again.returncode == 0
    assert (project / "train.py").read_text() == text


def test_fix_diff_writes_nothing(project: Path) -> None:
    out = xla_lens("fix", "--diff", "train.py", "--target", "legacy", cwd=project)
    assert out.returncode == 1
    assert "+import torch_xla.core.xla_model as xm" in out.stdout
    assert "-model = torch.nn.Linear(2, 2).cuda()" in out.stdout
    assert (project / "train.py").read_text() == CUDA


def test_fix_diff_of_a_file_without_final_newline_and_its_leftovers(project: Path) -> None:
    # No newline at the end, a review fix left (the picker's device string is compared), and
    # a safe fix that adds import lines above it: the leftover's line is the fixed text's.
    code = (
        'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
        'if device == "cuda":\n    print("gpu")\nm = torch.nn.Linear(2, 2).to(device)\n'
        'torch.save(m.state_dict(), "m.pt")'
    )
    (project / "tail.py").write_text(code)
    out = xla_lens("fix", "--diff", "tail.py", "--target", "modern", cwd=project)
    assert out.returncode == 1, out.stderr
    # The diff says the last line has no newline (as git does), so nothing printed after it
    # lands on that line.
    assert out.stdout.endswith("\n\\ No newline at end of file\n"), out.stdout
    assert '+xm.save(m.state_dict(), "m.pt")\n' in out.stdout
    # Left for review, at its line in the fixed text (the diff's b/ side), and said so.
    assert "tail.py: left after these fixes (line numbers of the fixed text, b/ in the diff)" in (
        out.stderr
    )
    body = out.stdout.splitlines()[3:]  # after ---, +++ and the one hunk's header
    fixed_lines = [line[1:] for line in body if line[:1] in " +"]
    picker = next(i for i, line in enumerate(fixed_lines, 1) if line.startswith("device ="))
    assert f"tail.py:{picker}:" in out.stderr and "XLA101" in out.stderr
    assert (project / "tail.py").read_text() == code


def test_fix_leaves_unparsable_files_untouched(project: Path) -> None:
    broken = "import torch\nx = torch.zeros(2).cuda(\n"
    (project / "broken.py").write_text(broken)
    out = xla_lens("fix", "broken.py", "train.py", "--target", "modern", cwd=project)
    assert out.returncode == 2
    assert "broken.py" in out.stderr and "left untouched" in out.stderr
    assert (project / "broken.py").read_text() == broken
    assert ".to(torch_xla.device())" in (project / "train.py").read_text()


def test_crlf_bom_and_tabs_survive_fix(project: Path) -> None:
    raw = "\ufeffimport torch\r\nif True:\r\n\tm = torch.nn.Linear(2, 2).cuda()\r\n"
    (project / "win.py").write_bytes(raw.encode("utf-8"))
    out = xla_lens("fix", "win.py", "--target", "modern", cwd=project)
    assert out.returncode == 0, out.stderr
    assert (project / "win.py").read_bytes().decode("utf-8") == (
        "\ufeffimport torch\r\nimport torch_xla\r\nif True:\r\n"
        "\tm = torch.nn.Linear(2, 2).to(torch_xla.device())\r\n"
    )


def test_suppression_comment_and_pyproject_settings(project: Path) -> None:
    (project / "train.py").write_text(
        "import torch\nm = torch.nn.Linear(2, 2).cuda()  # xla-lens: ignore[XLA101]\n"
    )
    assert xla_lens("check", "train.py", cwd=project).returncode == 0
    (project / "other.py").write_text(CUDA)
    (project / "pyproject.toml").write_text(
        '[tool.xla-lens]\ntarget = "legacy"\nignore = ["XLA1"]\n'
    )
    assert xla_lens("check", "other.py", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.xla-lens]\ntarget = "legacy"\n')
    out = xla_lens("check", "other.py", cwd=project)
    assert out.returncode == 1 and "xm.xla_device()" in out.stdout


def test_directory_walk_skips_venvs(project: Path) -> None:
    venv = project / ".venv" / "lib"
    venv.mkdir(parents=True)
    (venv / "dep.py").write_text(CUDA)
    out = xla_lens("check", ".", "--format", "json", "--target", "modern", cwd=project)
    assert {r["path"] for r in json.loads(out.stdout)} == {"train.py"}


def test_rules_listing_covers_the_registry(project: Path) -> None:
    from xla_lens.rules.registry import all_rules

    out = xla_lens("rules", "--format", "markdown", cwd=project)
    assert out.returncode == 0
    for rule in all_rules():
        assert f"[{rule.code}](#{rule.doc_anchor})" in out.stdout


def test_fix_says_when_the_script_still_does_not_reach_the_xla_device(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import argparse\n"
        "import torch\n"
        "from torch import nn\n\n"
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--device", default="cpu", help="cpu or cuda")\n'
        "args = parser.parse_args()\n"
        "model = nn.Linear(4, 1).to(args.device)\n"
        "torch.cuda.synchronize()\n"
    )
    proc = xla_lens("fix", "--target", "modern", str(script), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    # Nothing reaches XLA (the device default waits for review), so the CUDA-only call's
    # removal, which belongs with the move, waits with it (engine/consistency.py).
    assert "torch.cuda.synchronize" in script.read_text()
    assert 'default="cpu"' in script.read_text()  # the review fix was not applied
    assert "Convert held this back" in proc.stderr
    assert "does not reach the XLA device yet: see line" in proc.stderr
    assert (
        "(XLA101)" in proc.stderr
        and "2 fixes wait for your review (`xla-lens fix --unsafe-fixes` applies them)"
        in proc.stderr
    )
    assert "left for you (review or by hand)" in proc.stderr

    proc = xla_lens("fix", "--target", "modern", "--unsafe-fixes", str(script), cwd=tmp_path)
    assert "does not reach the XLA device" not in proc.stderr, proc.stderr
