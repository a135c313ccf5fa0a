"""XLA118: a launch helper in a sibling module spawns a worker that builds the process group
from its ``backend`` parameter: the helper is named at the call, and the script's "nccl"
(an argparse default, or a literal at the call) that reaches that parameter is reported
where it is written, with no fix (the helper's file must change too). CUDA streams in a
sibling module's function or class count as needing conversion."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.rules import xla118_workspace_helper as rule
from xla_lens.semantic import workspace, workspace_calls, workspace_classes

from tests.helpers import src

CODE = "XLA118"

LAUNCHER = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _worker(local_rank, main_func, world_size, backend, dist_url, args):
    dist.init_process_group(
        backend=backend, init_method=dist_url, world_size=world_size, rank=local_rank
    )
    torch.cuda.set_device(local_rank)
    main_func(*args)


def launch(main_func, num_gpus, backend="nccl", dist_url=None, args=()):
    if num_gpus > 1:
        mp.start_processes(
            _worker,
            nprocs=num_gpus,
            args=(main_func, num_gpus, backend, dist_url, args),
            start_method="spawn",
        )
    else:
        main_func(*args)
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    rule.clear_cache()
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_classes.clear_cache()
    yield


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


def _found(script: Path):
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [f for f in result.findings if f.code == CODE]


def _package(root: Path) -> None:
    _write(root / "pyproject.toml", "")
    _write(root / "detkit" / "__init__.py", "")
    _write(root / "detkit" / "core" / "__init__.py", "from .launch import launch\n")
    _write(root / "detkit" / "core" / "launch.py", LAUNCHER)


def test_argparse_backend_default_reaching_a_spawned_worker_is_reported(tmp_path: Path):
    _package(tmp_path)
    script = _write(
        tmp_path / "tools" / "train.py",
        """
        import argparse
        from detkit.core import launch

        def make_parser():
            parser = argparse.ArgumentParser("train")
            parser.add_argument(
                "--dist-backend", default="nccl", type=str, help="distributed backend"
            )
            parser.add_argument("--devices", default=2, type=int)
            return parser

        def main(args):
            print(args)

        if __name__ == "__main__":
            args = make_parser().parse_args()
            launch(main, args.devices, backend=args.dist_backend, args=(args,))
        """,
    )
    found = _found(script)
    by_line = {f.span.start.line + 1: f for f in found}
    # The default, where "nccl" is written: no fix (launch.py must change too).
    default = by_line[7]
    assert default.fix is None
    assert "init_process_group" in default.message and "core/launch.py" in default.message
    assert "line 17" in default.message and '"xla"' in default.message
    # The helper itself: its spawned worker sets up CUDA.
    call = by_line[17]
    assert call.message.startswith("launch() runs code in detkit/core/launch.py")
    assert "torch.cuda.set_device()" in call.message and call.fix is None


def test_a_literal_backend_at_the_call_positional_is_reported(tmp_path: Path):
    _package(tmp_path)
    script = _write(
        tmp_path / "tools" / "train.py",
        """
        from detkit.core import launch

        def main():
            pass

        launch(main, 2, "nccl")
        """,
    )
    lines = sorted(f.span.start.line + 1 for f in _found(script))
    assert lines == [6, 6]
    (literal,) = [f for f in _found(script) if "init_process_group" in f.message]
    assert literal.span.start.col == len("launch(main, 2, ")


def test_a_gloo_backend_or_an_unrelated_parameter_is_quiet(tmp_path: Path):
    _package(tmp_path)
    script = _write(
        tmp_path / "tools" / "train.py",
        """
        from detkit.core import launch

        def main():
            pass

        launch(main, 2, backend="gloo", dist_url="nccl")
        """,
    )
    assert [f for f in _found(script) if "init_process_group" in f.message] == []


STREAMS = """
import torch


class Prefetcher:
    def __init__(self, loader):
        self.loader = iter(loader)
        self.stream = torch.cuda.Stream()
        self.preload()

    def preload(self):
        self.batch = next(self.loader)
        with torch.cuda.stream(self.stream):
            self.batch = self.batch.to("cuda", non_blocking=True)

    def next(self):
        batch = self.batch
        batch.record_stream(torch.cuda.current_stream())
        self.preload()
        return batch


def overlap(tensors):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        out = [t * 2 for t in tensors]
    return out
"""


def test_cuda_streams_in_a_sibling_class_and_function_need_converting(tmp_path: Path):
    _write(tmp_path / "pyproject.toml", "")
    _write(tmp_path / "data" / "__init__.py", "from .prefetch import Prefetcher, overlap\n")
    _write(tmp_path / "data" / "prefetch.py", STREAMS)
    script = _write(
        tmp_path / "train.py",
        """
        from data import Prefetcher, overlap

        def train(loader, model):
            prefetcher = Prefetcher(loader)
            batch = prefetcher.next()
            outs = overlap([batch])
            return model(outs[0])
        """,
    )
    found = {f.span.start.line + 1: f for f in _found(script)}
    assert "Prefetcher() runs code in data/prefetch.py" in found[4].message
    assert "line 7:" in found[4].message and "stream" in found[4].message.lower()
    assert "overlap() runs code in data/prefetch.py" in found[6].message
    assert "line 23:" in found[6].message


def test_a_gpu_count_from_nvidia_smi_in_a_sibling_is_named_at_the_call(tmp_path: Path):
    _write(tmp_path / "pyproject.toml", "")
    _write(
        tmp_path / "utils" / "dist.py",
        """
        import os
        import subprocess

        def get_num_devices():
            gpu_list = os.getenv("CUDA_VISIBLE_DEVICES", None)
            if gpu_list is not None:
                return len(gpu_list.split(","))
            return len(os.popen("nvidia-smi -L").read().strip().split("\\n"))

        def gpu_names():
            return subprocess.check_output(["nvidia-smi", "--query-gpu=name"]).decode()

        def get_rank():
            return int(os.environ.get("RANK", 0))
        """,
    )
    _write(tmp_path / "utils" / "__init__.py", "from .dist import *\n")
    script = _write(
        tmp_path / "tools" / "train.py",
        """
        from utils import get_num_devices, get_rank, gpu_names
        n = get_num_devices()
        print(gpu_names(), get_rank())
        """,
    )
    found = {f.span.start.line + 1: f for f in _found(script)}
    assert "get_num_devices() runs code in utils/dist.py" in found[2].message
    assert "line 8: `nvidia-smi`" in found[2].message
    assert "gpu_names()" in found[3].message
    assert sorted(found) == [2, 3]  # get_rank: an env read alone is no evidence


def test_a_default_the_script_itself_also_inits_with_is_left_to_xla205(tmp_path: Path):
    _package(tmp_path)
    script = _write(
        tmp_path / "tools" / "train.py",
        """
        import argparse
        import torch.distributed as dist
        from detkit.core import launch

        p = argparse.ArgumentParser()
        p.add_argument("--dist-backend", default="nccl")

        def main(args):
            dist.init_process_group(backend=args.dist_backend)

        args = p.parse_args()
        launch(main, 2, backend=args.dist_backend, args=(args,))
        """,
    )
    assert [f for f in _found(script) if "init_process_group" in f.message] == []
    result = analyze(script.read_text(), str(script))
    assert any(f.code == "XLA205" and f.span.start.line == 5 for f in result.findings)
