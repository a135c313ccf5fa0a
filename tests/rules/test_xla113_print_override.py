"""XLA113 and a script whose print is already master-only: a helper (in the script or in a
workspace module it imports and calls, read from disk) replaces ``builtins.print`` with one
that prints on the master only. The prints then need no ``xm.master_print``."""

from pathlib import Path

from xla_lens.engine import analyze

from tests.helpers import findings, src

SCRIPT = """
import os
import torch
import torch.distributed as dist
import tools.setup as ts


def run():
    ts.start(int(os.environ.get("RANK", "0")))
    print("settings ready")
    net = torch.nn.Linear(2, 2).cuda()
    dist.init_process_group("nccl")
    print("finished")


if __name__ == "__main__":
    run()
"""

OVERRIDE = """
import builtins as __builtin__


def silence_others(is_master):
    original = __builtin__.print

    def quiet(*args, **kwargs):
        if is_master or kwargs.pop("force", False):
            original(*args, **kwargs)

    __builtin__.print = quiet


def start(rank):
    silence_others(rank == 0)
"""

NO_OVERRIDE = """
import builtins


def start(rank):
    builtins.max = min  # not print
"""


def _check(tmp_path: Path, helper: str, script: str = SCRIPT) -> list[int]:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("")
    (tmp_path / "tools" / "setup.py").write_text(src(helper))
    path = tmp_path / "main.py"
    path.write_text(src(script))
    result = analyze(path.read_text(), str(path))
    assert result.ok and not result.rule_errors
    return [f.span.start.line + 1 for f in result.findings if f.code == "XLA113"]


def test_a_workspace_helper_that_makes_print_master_only_quiets_prints(tmp_path: Path):
    assert _check(tmp_path, OVERRIDE) == []


def test_a_workspace_helper_imported_by_name_counts_too(tmp_path: Path):
    script = SCRIPT.replace("import tools.setup as ts", "from tools.setup import start")
    script = script.replace("ts.start(", "start(")
    assert _check(tmp_path, OVERRIDE, script) == []


def test_a_workspace_helper_that_leaves_print_alone_keeps_the_findings(tmp_path: Path):
    assert _check(tmp_path, NO_OVERRIDE) == [9, 12]


def test_an_imported_but_never_called_override_keeps_the_findings(tmp_path: Path):
    script = SCRIPT.replace('    ts.start(int(os.environ.get("RANK", "0")))\n', "")
    assert _check(tmp_path, OVERRIDE, script) == [8, 11]


def test_writes_are_still_reported_when_print_is_master_only(tmp_path: Path):
    script = SCRIPT.replace('    print("finished")\n', '    torch.save(net, "net.pt")\n')
    assert _check(tmp_path, OVERRIDE, script) == [12]


def test_the_override_spelled_with_dunder_builtin_in_the_script_itself():
    code = """
    import builtins as __builtin__
    import torch.distributed as dist

    def setup(is_master):
        keep = __builtin__.print

        def shown(*a, **k):
            if is_master:
                keep(*a, **k)

        __builtin__.print = shown

    def main(rank):
        dist.init_process_group("nccl")
        setup(rank == 0)
        print("hello")
    """
    assert findings(code, "XLA113") == []


def test_a_print_before_the_override_in_the_same_function_is_still_reported(tmp_path: Path):
    # Every replica prints it: the helper replaces print only after it has run.
    script = SCRIPT.replace(
        '    ts.start(int(os.environ.get("RANK", "0")))\n',
        '    print("starting")\n    ts.start(int(os.environ.get("RANK", "0")))\n',
    )
    assert _check(tmp_path, OVERRIDE, script) == [8]
