"""graph_diff on graph dumps recorded from real torch_xla 2.9 runs of the explain_*.py scripts
(XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1 XLA_SAVE_TENSORS_FMT=hlo): what changed, and where."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from xla_lens.rules.base import DOC_BASE, doc_url
from xla_lens.rules.registry import get_rule
from xla_lens.runner import graph_diff
from xla_lens.runner.events import Compile
from xla_lens.runner.explain import GRAPHS_FILE, dump_env, read_graphs
from xla_lens.runner.frames import UserCode
from xla_lens.runner.graph_diff import (
    compile_sites,
    diff_graphs,
    explain,
    parse_dump,
    summarize,
)
from xla_lens.runner.problems import find_problems
from xla_lens.runner.summary import group_lines

from .conftest import DATA, marked_line

GRAPHS = DATA / "graphs"
README = Path(__file__).parents[2] / "README.md"


def recorded(name: str):
    """The recorded dump of explain_<name>.py, and a user-file test matching that script."""
    graphs = parse_dump((GRAPHS / f"explain_{name}.hlo.txt").read_text())
    script = f"explain_{name}.py"
    return graphs, (lambda file: file.endswith("/" + script)), DATA / script


def test_parses_every_synced_graph_with_frames_shapes_and_locations():
    graphs, is_user, script = recorded("shape")
    assert len(graphs) == 4 and all(len(g.graph_hash) >= 31 for g in graphs)
    assert graphs[1].graph_hash == graphs[2].graph_hash  # full batches: the same graph
    trigger = graphs[0].frames[-1]
    assert trigger.function == "<module>" and is_user(trigger.file)
    assert trigger.line == marked_line(script, "# TRIGGER")
    batch = next(n for n in graphs[3].nodes if n.is_input and n.shape == "f32[6,12]")
    assert batch.op_type == "xla::device_data" and batch.line == marked_line(script, "# CAUSE")
    mean_count = next(n for n in graphs[1].nodes if n.opcode == "constant" and n.value == "8")
    assert mean_count.op_type == "aten::mean" and mean_count.shape == "s32[]"


def test_a_smaller_last_batch_is_a_shape_change_where_it_enters_the_device():
    graphs, is_user, script = recorded("shape")
    found = explain(compile_sites(graphs, is_user), graphs, is_user)
    # step 2 differs from step 1 only by warm-up (weight became an input): not explained
    assert len(found) == 1
    ex = found[0]
    assert ex.trigger_line == marked_line(script, "# TRIGGER") and ex.step == 4
    change = ex.change
    assert change.kind == "shape" and change.changed == "f32[8,12] → f32[6,12]"
    assert change.cause is not None and change.cause.line == marked_line(script, "# CAUSE")
    assert change.headline == "input shape f32[8,12] → f32[6,12]"
    assert "drop_last=True" in change.hint and change.doc_url.endswith("/XLA402.md")


def test_warm_up_alone_is_no_recompilation_cause():
    graphs, is_user, _ = recorded("shape")
    # graph 1 builds the initial weight in the graph, graph 2 takes it as an input
    assert diff_graphs(graphs[0], graphs[1], is_user) is None


def test_a_python_slice_offset_is_a_baked_constant_at_its_line():
    graphs, is_user, script = recorded("constant")
    found = explain(compile_sites(graphs, is_user), graphs, is_user)
    assert [ex.change.kind for ex in found] == ["constant"] * 3
    assert [ex.change.changed for ex in found] == [
        "slice [0:8, 0:4] → [2:10, 0:4]",
        "slice [2:10, 0:4] → [4:12, 0:4]",
        "slice [4:12, 0:4] → [6:14, 0:4]",
    ]
    cause = marked_line(script, "# CAUSE")
    assert {ex.change.cause.line for ex in found} == {cause}
    assert {ex.change.cause.op_type for ex in found} == {"xla::select"}
    assert "as a tensor" in found[0].change.hint
    assert found[0].change.doc_url.endswith("#recompilations-explained")


def test_a_python_branch_changes_the_op_sequence_at_the_branch_taken():
    graphs, is_user, script = recorded("branch")
    found = explain(compile_sites(graphs, is_user), graphs, is_user)
    assert [ex.change.kind for ex in found] == ["branch", "branch"]
    relu, sigmoid = found
    assert relu.change.cause.line == marked_line(script, "# BRANCH-B")
    assert sigmoid.change.cause.line == marked_line(script, "# BRANCH-C")
    # diffed against the nearest graph (the relu one), not the first
    assert sigmoid.change.changed == "aten::relu → aten::sigmoid" and not sigmoid.against_first
    assert "torch.where" in sigmoid.change.hint
    assert sigmoid.change.doc_url.endswith("/XLA404.md")
    # the summary per trigger prefers the diff that is not against the warm-up graph
    ((best, count),) = summarize(found).values()
    assert best is sigmoid and count == 1


def test_nothing_outside_the_users_files_is_named_a_cause():
    graphs, _, _ = recorded("shape")
    assert explain(compile_sites(graphs, lambda f: True), graphs, lambda f: False) == []


def test_parses_tuple_shapes_and_constant_values():
    text = "\n".join(
        [
            "[ScheduleSyncTensorsGraph]",
            "TensorsGraphInfo:",
            "  <module> (/w/t.py:9)",
            "",
            "## BEGIN_GRAPH",
            "ENTRY %IrToHlo.5 (p0.1: f32[2]) -> (f32[2], s32[]) {",
            '  %p0.1 = f32[2]{0} parameter(0), metadata={op_type="xla__device_data" '
            'op_name="xla__device_data" source_file="/w/t.py" source_line=7}',
            '  %constant.2 = s32[] constant(-3), metadata={op_type="prim__Constant" '
            'op_name="prim__Constant" source_file="/w/t.py" source_line=8}',
            "  ROOT %tuple.3 = (f32[2]{0}, s32[]) tuple(f32[2]{0} %p0.1, s32[] %constant.2)",
            "}",
            "",
            "Graph Hash: abc",
            "",
            "## END_GRAPH",
        ]
    )
    (graph,) = parse_dump(text)
    p0, const, root = graph.nodes
    assert (p0.shape, p0.line, p0.file, p0.value) == ("f32[2]", 7, "/w/t.py", "")
    assert (const.opcode, const.value, const.op_type) == ("constant", "-3", "prim::Constant")
    assert root.shape == "(f32[2], s32[])" and root.operands == ["p0.1", "constant.2"]
    assert graph.frames[0].line == 9 and graph.graph_hash == "abc"


def test_doc_links_are_the_rules_anchors_and_the_readme_section():
    assert graph_diff.DOC_URLS["shape"] == doc_url(get_rule("XLA402"))
    assert graph_diff.DOC_URLS["branch"] == doc_url(get_rule("XLA404"))
    assert graph_diff.DOC_URLS["constant"] == DOC_BASE + "#recompilations-explained"
    headings = [line for line in README.read_text().splitlines() if line.startswith("#")]
    assert any(h.lstrip("# ").lower() == "recompilations explained" for h in headings)


def _compiles(graphs, is_user):
    return [
        Compile("user torch_xla.sync", s.graph_hash, None, None, s.file, s.line, None, s.step, 0.1)
        for s in compile_sites(graphs, is_user)
    ]


def test_the_problem_sits_at_the_cause_line_and_names_the_trigger(tmp_path):
    graphs, _, script = recorded("shape")
    # the recorded paths are those of the recording checkout: map them onto this one
    user = UserCode(script)
    graphs = _relocated(graphs, script)
    events = _compiles(graphs, user.is_user)
    explanations = explain(compile_sites(graphs, user.is_user), graphs, user.is_user)
    problems = find_problems(
        group_lines(events), events, {}, [], user, None, 0.3, 0.0, explanations=explanations
    )
    (p,) = [p for p in problems if p.kind == "recompilation"]
    cause, trigger = marked_line(script, "# CAUSE"), marked_line(script, "# TRIGGER")
    assert (p.file, p.line) == (str(script), cause) == (p.cause_file, p.cause_line)
    assert (p.trigger_file, p.trigger_line) == (str(script), trigger)
    assert p.change_kind == "shape" and p.changed == "f32[8,12] → f32[6,12]"
    assert p.message.startswith("recompiles: input shape f32[8,12] → f32[6,12]")
    assert p.hint and p.doc_url
    # without explanations only the old guess remains, at the trigger line
    plain = find_problems(group_lines(events), events, {}, [], user, None, 0.3, 0.0)
    assert all(p.line == trigger and p.cause_line is None for p in plain)


def test_a_branch_seen_in_only_two_steps_is_not_reported(tmp_path):
    graphs, _, script = recorded("branch")
    user = UserCode(script)
    graphs = _relocated(graphs, script)[:2]  # warm-up graph and one branch
    events = _compiles(graphs, user.is_user)
    explanations = explain(compile_sites(graphs, user.is_user), graphs, user.is_user)
    assert explanations and explanations[0].change.kind == "branch"
    problems = find_problems(
        group_lines(events), events, {}, [], user, None, 0.1, 0.0, explanations=explanations
    )
    assert not [p for p in problems if p.kind == "recompilation"]


def _relocated(graphs, script: Path):
    name = script.name
    for g in graphs:
        for f in g.frames:
            if f.file.endswith("/" + name):
                f.file = str(script)
        for n in g.nodes:
            if n.file and n.file.endswith("/" + name):
                n.file = str(script)
    return graphs


def test_dump_env_is_off_at_zero_steps_and_leaves_a_users_dump_alone(tmp_path):
    env = dump_env(tmp_path, 30, 12, {})
    assert env["XLA_SAVE_TENSORS_FMT"] == "hlo" and env["XLA_IR_DEBUG"] == "1"
    assert env["XLA_SAVE_TENSORS_FILE"] == env["XLA_LENS_GRAPHS_FILE"]
    assert dump_env(tmp_path, 0, 12, {}) == {}
    assert dump_env(tmp_path, 30, 12, {"XLA_SAVE_TENSORS_FILE": "/mine"}) == {}


def test_read_graphs_takes_the_window_and_skips_the_dev_null_link(tmp_path):
    text = (GRAPHS / "explain_shape.hlo.txt").read_text()
    (tmp_path / f"{GRAPHS_FILE}.0.window").write_text(text)
    os.symlink(os.devnull, tmp_path / f"{GRAPHS_FILE}.0")
    (tmp_path / f"{GRAPHS_FILE}.junk").write_text(text)
    assert len(read_graphs(tmp_path)) == 4
    (tmp_path / f"{GRAPHS_FILE}.0").unlink()
    (tmp_path / f"{GRAPHS_FILE}.0").write_text(text)  # a window that never closed
    assert len(read_graphs(tmp_path)) == 8


@pytest.mark.parametrize("name", ["shape", "constant", "branch"])
def test_recorded_dumps_stay_small(name):
    assert (GRAPHS / f"explain_{name}.hlo.txt").stat().st_size < 32_000


def test_cli_summary_prints_cause_change_hint_and_link():
    from io import StringIO

    from xla_lens.runner.cli import print_summary
    from xla_lens.runner.events import Problem
    from xla_lens.runner.summary import RunSummary

    p = Problem(
        "recompilation",
        "/w/train.py",
        11,
        "recompiles: input shape f32[8,12] → f32[6,12]; the sync at line 13 compiled 3 graphs",
        cause_file="/w/train.py",
        cause_line=11,
        change_kind="shape",
        changed="f32[8,12] → f32[6,12]",
        hint="drop the ragged last batch",
        doc_url="https://x/XLA402.md",
        trigger_file="/w/train.py",
        trigger_line=13,
    )
    out = StringIO()
    print_summary(RunSummary(script="/w/train.py", status="ok", problems=[p]), out)
    text = out.getvalue()
    assert "train.py:11: recompilation: recompiles: input shape f32[8,12] → f32[6,12]" in text
    assert "changed (shape): f32[8,12] → f32[6,12]" in text
    assert "hint: drop the ragged last batch" in text and "see https://x/XLA402.md" in text
