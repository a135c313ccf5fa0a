"""What a run looks like in the editor, from recorded results (no torch_xla run): inlay labels
within VS Code's 43-character cut with the problem first, tooltips that say each detail once,
the cause line and the trigger line of an explained recompilation, whole-run problems, the
device sentence, the end line and the code lens of a cancelled run."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from xla_lens.lsp import run_diagnostics, run_inlay, run_lens, run_messages
from xla_lens.lsp.run_results import RunStore
from xla_lens.runner import LineStats, RunSummary
from xla_lens.runner.events import Compile, DeviceChosen, Execute, Problem
from xla_lens.runner.problems import find_problems

SCRIPT = """import torch
import torch_xla

device = torch_xla.device()
for step in range(10):
    x = batches[step].to(device)
    loss = model(x).sum()
    loss.backward()
    torch_xla.sync()
"""
CAUSE, TRIGGER = 6, 9  # 1-based: the .to(device) line and the sync
WHOLE = types.Range(types.Position(0, 0), types.Position(1000, 0))


def explained(path: Path) -> Problem:
    """A recompilation as the explaining runner reports it: at its cause, with the details
    in optional fields (set as attributes so this works before and after they land)."""
    p = Problem("recompilation", str(path), CAUSE, "x changed shape between steps")
    extra = {
        "cause_file": str(path),
        "cause_line": CAUSE,
        "change_kind": "shape",
        "changed": "f32[8,12] → f32[7,12]",
        "hint": "use drop_last=True or pad the last batch to a fixed size",
        "doc_url": "https://example.invalid/rules#recompile-shape",
        "trigger_file": str(path),
        "trigger_line": TRIGGER,
    }
    for key, value in extra.items():
        setattr(p, key, value)
    return p


def finished_run(tmp_path: Path, problems: list[Problem], status: str = "ok"):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    store = RunStore()
    uri = path.as_uri()
    run = store.begin(uri, str(path), SCRIPT)
    stats = LineStats(str(path), TRIGGER, "main", compiles=10, uncached_compiles=3, executes=10)
    stats.compile_s, stats.causes = 2.5, {"user torch_xla.sync": 10}
    run.summary = RunSummary(
        script=str(path),
        status=status,
        device="CPU",
        device_reason="no GPU, TPU or Neuron device is visible: running on CPU PJRT",
        steps=10,
        uncached_compiles=3,
        cached_compiles=7,
        compile_s=2.5,
        lines=[stats],
        problems=[p(path) if callable(p) else p for p in problems],
    )
    run.changed()
    return store, uri, path


def by_line(store: RunStore, uri: str, text: str) -> dict[int, types.InlayHint]:
    hints = run_inlay.hints_for(store, uri, text, WHOLE, "utf-16")
    return {h.position.line: h for h in hints}


def test_explained_recompilation_shows_at_its_cause_with_the_problem_first(tmp_path: Path):
    store, uri, _ = finished_run(tmp_path, [explained])
    hints = by_line(store, uri, SCRIPT)
    cause = hints[CAUSE - 1]
    assert cause.label == "recompiles: f32[8,12]→f32[7,12]"
    assert len(cause.label) <= run_inlay.MAX_LABEL
    trigger = hints[TRIGGER - 1]
    assert trigger.label.startswith(f"recompiled: see line {CAUSE}")
    assert len(trigger.label) <= run_inlay.MAX_LABEL

    tip = cause.tooltip
    assert isinstance(tip, types.MarkupContent) and tip.kind == types.MarkupKind.Markdown
    for fact in ("f32[8,12] → f32[7,12]", "drop_last=True", "example.invalid/rules"):
        assert tip.value.count(fact) == 1, (fact, tip.value)
    # The diagnostic says the message; the tooltip must not repeat it.
    assert "x changed shape between steps" not in tip.value

    diags = run_diagnostics.run_diagnostics(store, uri, SCRIPT, "utf-16")
    (diag,) = diags
    assert diag.range.start.line == CAUSE - 1 and diag.code == "recompilation"
    assert diag.code_description.href.endswith("#recompile-shape")


def test_see_line_follows_an_edit_above_the_cause(tmp_path: Path):
    store, uri, _ = finished_run(tmp_path, [explained])
    edited = "# a new first line\n" + SCRIPT
    hints = by_line(store, uri, edited)
    assert hints[CAUSE].label.startswith("recompiles: ")
    assert hints[TRIGGER].label.startswith(f"recompiled: see line {CAUSE + 1}")


def test_labels_stay_short_and_the_problem_comes_first(tmp_path: Path):
    long_change = Problem("recompilation", None, TRIGGER, "m")
    long_change.changed = "f32[128,3,224,224] → f32[17,3,224,224], s64[128] → s64[17]"
    long_change.change_kind = "shape"
    old_style = Problem(
        "recompilation", None, TRIGGER, "… so most likely a tensor shape changes between steps"
    )
    for problem, label in (
        (long_change, "recompiles: shape changed"),
        (old_style, "recompiles: shape changed"),
    ):
        problem.file = str(tmp_path / "train.py")
        store, uri, _ = finished_run(tmp_path, [problem])
        hint = by_line(store, uri, SCRIPT)[TRIGGER - 1]
        assert hint.label.startswith(label), hint.label
        assert len(hint.label) <= run_inlay.MAX_LABEL, hint.label
        assert "3 compiles" in hint.label  # fits after the problem
    store, uri, _ = finished_run(tmp_path, [])
    assert by_line(store, uri, SCRIPT)[TRIGGER - 1].label == "3 compiles · 2.5 s · 7 cached"


def test_one_compile_is_singular(tmp_path: Path):
    store, uri, path = finished_run(tmp_path, [])
    store.get(uri).summary.lines[0].uncached_compiles = 1
    store.get(uri).changed()
    assert by_line(store, uri, SCRIPT)[TRIGGER - 1].label.startswith("1 compile · ")


def test_no_xla_is_a_diagnostic_and_a_hint_on_the_first_line(tmp_path: Path):
    no_xla = Problem("no-xla", None, None, "this script never used the XLA device")
    store, uri, _ = finished_run(tmp_path, [no_xla])
    (diag,) = run_diagnostics.run_diagnostics(store, uri, SCRIPT, "utf-16")
    assert (diag.code, diag.range.start.line) == ("no-xla", 0)
    assert diag.severity == types.DiagnosticSeverity.Warning
    assert by_line(store, uri, SCRIPT)[0].label == "never used XLA: convert it first"
    title = run_lens.result_title(store.get(uri).summary)
    assert title == "last run: never used XLA (plain PyTorch): convert it first"


def test_device_sentence_is_one_short_line_and_the_reason_stays_whole():
    long_reason = (
        "NVIDIA H200 is visible, but torch_xla 2.9.0 has no CUDA PJRT device (XLA:GPU was "
        "deprecated in 2.8 and removed in 2.9): running on CPU PJRT. To run on the GPU: ..."
    )
    gpu = DeviceChosen("CPU", "auto", long_reason, "2.9.0", True, ["NVIDIA H200"])
    sentence = run_messages.device_sentence(gpu)
    assert sentence == "GPU found, but torch_xla 2.9 has no CUDA backend: running on CPU PJRT"
    plain = DeviceChosen("CPU", "auto", "no GPU ...", "2.9.0", False)
    assert run_messages.device_sentence(plain).endswith("running on CPU PJRT")
    requested = DeviceChosen("CPU", "CPU", "CPU PJRT was requested", "2.9.0", False)
    assert run_messages.device_sentence(requested) == "Running on CPU PJRT (requested)"


def test_a_cancelled_run_says_cancelled_without_an_exit_code(tmp_path: Path):
    store, uri, _ = finished_run(tmp_path, [], status="cancelled")
    summary = store.get(uri).summary
    summary.returncode, summary.steps, summary.uncached_compiles = -15, 1, 1
    assert run_messages.end_message(summary) == ("cancelled · 1 step · 1 compile · 2.5 s compiling")
    title = run_lens.result_title(summary)
    assert title.startswith("last run (cancelled): CPU · 1 step · 1 compile")
    assert "-15" not in title and "exit" not in title
    tooltip = run_lens.result_tooltip(summary)
    assert "no GPU, TPU or Neuron device is visible" in tooltip and "7 cached" in tooltip


def test_summary_text_is_the_cli_table(tmp_path: Path):
    store, uri, path = finished_run(tmp_path, [])
    text = run_messages.summary_text(store.get(uri).summary)
    assert text.startswith("xla-lens: ") and "3 compiles, 7 cached" in text
    assert "train.py:9" in text


def _graph(kind, step: int, seconds: float):
    return kind("user torch_xla.sync", "h", 1, 1, "/s.py", 9, "main", step, seconds)


def test_compile_bound_needs_a_finished_loop():
    from xla_lens.runner.frames import UserCode
    from xla_lens.runner.summary import group_lines

    def problems(events, stopped_early: bool) -> list[str]:
        lines = group_lines(events)
        kinds = find_problems(
            lines, events, {}, [], UserCode(Path("/s.py")), None, 3.0, 0.1, (), stopped_early
        )
        return [p.kind for p in kinds]

    one_step = [_graph(Compile, 1, 3.0), _graph(Execute, 1, 0.1)]
    loop = one_step + [_graph(Execute, 2, 0.0), _graph(Execute, 3, 0.0)]
    assert problems(one_step, stopped_early=False) == []
    assert problems(loop, stopped_early=True) == []
    assert problems(loop, stopped_early=False) == ["compile-bound"]


def test_the_tooltip_leaves_out_what_the_diagnostic_already_says(tmp_path: Path):
    """VS Code shows the line's diagnostic above the hint's tooltip when the hint is hovered."""

    def says_it_all(path: Path) -> Problem:
        p = explained(path)
        p.message = f"recompiles: input shape {p.changed}; the sync at line {TRIGGER} compiled"
        return p

    store, uri, _ = finished_run(tmp_path, [says_it_all])
    tip = by_line(store, uri, SCRIPT)[CAUSE - 1].tooltip.value
    assert "f32[8,12]" not in tip and f"line {TRIGGER}" not in tip
    assert "drop_last=True" in tip and "example.invalid" in tip
