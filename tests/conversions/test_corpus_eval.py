"""bench/corpus_eval.py scores a corpus correctly: a tiny corpus written here (our own code,
not the dev corpus), with one required label hit, one missed, and one trap flagged."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import corpus_eval  # noqa: E402

SCRIPT = textwrap.dedent(
    """\
    import torch
    from torch import nn

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(8, 4, device=device)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("done")  # a line nothing should flag
    """
)


def _corpus(tmp_path: Path, group: str, labels: list[dict]) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus"
    (corpus / "files").mkdir(parents=True)
    (corpus / "files" / "me_toy__train.py").write_text(SCRIPT)
    meta = tmp_path / "meta"
    meta.mkdir()
    (meta / "MANIFEST.tsv").write_text(
        f"group\trepo\tpath\tcommit\tlines\tidioms\n{group}\tme/toy\ttrain.py\tabc\t13\ttoy\n"
    )
    base = {"repo": "me/toy", "path": "train.py", "text_on_first_line": "", "what": "x"}
    (meta / "labels.json").write_text(json.dumps([{**base, **lab} for lab in labels]))
    return corpus, meta / "labels.json"


def _run(capsys, corpus: Path, labels: Path) -> dict:
    assert corpus_eval.main([str(corpus), "--labels", str(labels), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_recall_counts_overlap_and_reports_misses(tmp_path, capsys):
    corpus, labels = _corpus(
        tmp_path,
        "A",
        [
            {"kind": "required", "first_line": 4, "last_line": 4},  # the device picker
            {"kind": "required", "first_line": 13, "last_line": 13},  # nothing there
        ],
    )
    out = _run(capsys, corpus, labels)
    total = out["total"]
    assert (total["required"], total["required_hit"]) == (2, 1)
    (report,) = out["files"]
    assert [m["lines"] for m in report["missed"]] == ["L13-13"]
    assert total["parse_failures"] == 0 and total["not_idempotent"] == 0
    assert total["applied_safe"] >= 1


def test_group_e_conversion_findings_and_traps_are_wrong(tmp_path, capsys):
    corpus, labels = _corpus(
        tmp_path, "E", [{"kind": "trap", "first_line": 4, "last_line": 4, "what": "bait"}]
    )
    out = _run(capsys, corpus, labels)
    wrong = out["files"][0]["wrong"]
    assert any(w["trap"] and w["first_line"] == 4 for w in wrong)
    assert out["groups"]["E"]["wrong_findings"] == len(wrong) >= 2


def test_missing_labels_is_a_clear_error(tmp_path, capsys):
    assert corpus_eval.main([str(tmp_path), "--labels", str(tmp_path / "none.json")]) == 2
    assert "labels not found" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("label", "first", "last", "hit"),
    [((4, 4), 4, 4, True), ((4, 6), 6, 9, True), ((4, 6), 7, 9, False), ((4, 6), 1, 3, False)],
)
def test_overlap(label, first, last, hit):
    lab = corpus_eval.Label("r", "p", "required", *label, "", "")
    assert lab.overlaps(first, last) is hit


@pytest.mark.xla
def test_convert_and_run_applies_the_swap_and_proves(tmp_path):
    import difflib

    import corpus_run

    swapped = (Path(__file__).parent / "fixtures" / "basic_picker.py").read_text()
    original = "\n".join(line for line in swapped.splitlines() if "xla-lens-" not in line) + "\n"
    corpus = tmp_path / "corpus"
    (corpus / "files").mkdir(parents=True)
    (corpus / "swaps").mkdir()
    (corpus / "files" / "me_toy__train.py").write_text(original)
    patch = difflib.unified_diff(
        original.splitlines(keepends=True), swapped.splitlines(keepends=True), "a", "b"
    )
    (corpus / "swaps" / "toy.patch").write_text("".join(patch))
    spec = {"name": "me_toy__train.py", "script": "train.py", "patch": "toy.patch"}
    (corpus / "swaps" / "runs.json").write_text(json.dumps([spec]))
    (run,) = corpus_run.run_all(corpus)
    assert run["status"] == "proven", run
    assert run["converted_device"].startswith("xla")


@pytest.mark.xla
def test_reviewed_run_accepts_only_the_listed_review_fixes(tmp_path):
    """A --device option defaulting to the CPU: Convert leaves it (its fix needs review) and
    the script stays on the CPU; a reviewer who accepts XLA101's review fix gets XLA."""
    import corpus_run

    fixture = Path(__file__).parent / "fixtures" / "device_argparse_default.py"
    script = fixture.read_text().replace('default="cuda"', 'default="cpu"')
    assert 'default="cpu"' in script
    corpus = tmp_path / "corpus"
    (corpus / "files").mkdir(parents=True)
    (corpus / "swaps").mkdir()
    (corpus / "files" / "me_toy__train.py").write_text(script)
    (corpus / "swaps" / "none.patch").write_text("")
    spec = {
        "name": "me_toy__train.py",
        "script": "train.py",
        "patch": "none.patch",
        "accept_review": {"XLA101": "the user wants the XLA device by default"},
    }
    (corpus / "swaps" / "runs.json").write_text(json.dumps([spec]))
    safe, reviewed = corpus_run.run_all(corpus, modes=("safe", "reviewed"))
    assert (safe["mode"], safe["status"], safe["converted_device"]) == ("safe", "FAILED", "cpu")
    assert "XLA101" in safe["remaining"]
    assert reviewed["mode"] == "reviewed" and reviewed["status"] == "proven", reviewed
    assert reviewed["converted_device"].startswith("xla")
    assert "XLA101" in reviewed["applied"]
