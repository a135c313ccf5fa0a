"""XLA205/XLA204/XLA202 together: the "xla" backend only reduces across processes that
torch_xla's launcher starts, and there only with the xla:// rendezvous (held-out 8 r1, r5).
Measured on PJRT CPU, torch_xla 2.9: under torchrun, backend "xla" with env:// gave two
processes 1.0 and 2.0 after all_reduce (no reduction), with xla:// both "rank 0 of 1"; under
torch_xla.launch an env:// group fails ("RANK expected")."""

from __future__ import annotations

from pathlib import Path

from xla_lens.engine import analyze

from tests.helpers import findings, fixed

# torchrun-style init behind a sentinel; rendezvous from an argparse option (env:// default).
OPTION_URL = """
import argparse
import os
import torch.distributed as dist


def setup(args):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        rank = int(os.environ["RANK"])
        world = int(os.environ["WORLD_SIZE"])
    else:
        return False
    dist.init_process_group("nccl", init_method=args.url, world_size=world, rank=rank)
    return True


def main(args):
    if setup(args):
        dist.barrier()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="env://")
    main(p.parse_args())
"""


def test_option_rendezvous_becomes_xla_for_review_and_the_launcher_too():
    (f,) = [f for f in findings(OPTION_URL, "XLA205") if f.fix is not None]
    assert not f.fix.safe
    assert "--url given on the command line is no longer used" in f.fix.review_reason
    # Nothing safe turns the group into xla://: the XLA launcher would fail at start.
    (launch,) = findings(OPTION_URL, "XLA204")
    assert not launch.fix.safe
    assert "RANK expected" in launch.fix.review_reason
    # ... so torchrun stays, and the backend rewrite says why it needs review there.
    assert "does not reduce across them" in f.fix.review_reason
    out = fixed(OPTION_URL, unsafe=True)
    assert 'init_method="xla://"' in out and "args.url" not in out.split("def main")[0]
    assert "torch_xla.launch(_mp_fn" in out
    safe = fixed(OPTION_URL)
    assert '"nccl"' in safe and "torch_xla.launch" not in safe


LITERAL_ENV = """
import torch.distributed as dist


def main():
    dist.init_process_group("nccl", init_method="env://")
    dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_literal_env_rendezvous_becomes_xla_in_the_same_safe_fix():
    (f,) = findings(LITERAL_ENV, "XLA205")
    assert f.fix.safe, f.fix.review_reason
    out = fixed(LITERAL_ENV)
    assert 'dist.init_process_group("xla", init_method="xla://")' in out
    assert "torch_xla.launch(_mp_fn)" in out


def test_tcp_rendezvous_becomes_xla_for_review():
    code = LITERAL_ENV.replace("env://", "tcp://10.0.0.1:23456")
    f = next(f for f in findings(code, "XLA205") if f.fix is not None)
    assert not f.fix.safe and "address it names is no longer used" in f.fix.review_reason


def test_no_init_method_keeps_getting_xla_rendezvous_safely():
    code = LITERAL_ENV.replace(', init_method="env://"', "")
    assert 'init_process_group("xla", init_method="xla://")' in fixed(code)


GLOO = """
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    print(dist.get_rank())


if __name__ == "__main__":
    main()
"""


def test_launcher_is_review_when_an_env_group_stays():
    (f,) = findings(GLOO, "XLA204")
    assert not f.fix.safe
    assert "line 5" in f.fix.review_reason and "RANK expected" in f.fix.review_reason
    assert "torch_xla.launch" not in fixed(GLOO)


def test_backend_rewrite_under_mp_spawn_is_review():
    code = """
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:23456", rank=rank, world_size=2)
    dist.barrier()


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2)
"""
    f = next(f for f in findings(code, "XLA205") if f.fix is not None)
    assert not f.fix.safe and "does not reduce across them" in f.fix.review_reason


SAMPLER = """
import torch
import torch.distributed as dist


class ShardSampler(torch.utils.data.Sampler):
    def __init__(self, n, num_replicas=None):
        if num_replicas is None:
            num_replicas = dist.get_world_size()
        self.indices = list(range(n))[dist.get_rank() :: num_replicas]
"""
CALLER = """
import torch.distributed as dist
from shard_sampler import ShardSampler


def main():
    dist.init_process_group("gloo")
    sampler = ShardSampler(8)


if __name__ == "__main__":
    main()
"""


def _sampler_findings(tmp_path: Path, caller: str | None) -> list:
    sampler = tmp_path / "shard_sampler.py"
    sampler.write_text(SAMPLER.lstrip())
    if caller is not None:
        (tmp_path / "train.py").write_text(caller.lstrip())
    result = analyze(sampler.read_text(), str(sampler), target="modern")
    return [f for f in result.findings if f.code == "XLA202"]


def test_sampler_whose_caller_builds_the_group_is_left_alone(tmp_path):
    assert _sampler_findings(tmp_path, CALLER) == []


def test_sampler_with_unknown_callers_is_review(tmp_path):
    found = _sampler_findings(tmp_path, None)
    assert len(found) == 2
    for f in found:
        assert not f.fix.safe
        assert "may build a process group" in f.fix.review_reason
        assert "torchrun" in f.fix.review_reason


def test_sampler_whose_caller_has_no_group_is_review(tmp_path):
    found = _sampler_findings(tmp_path, CALLER.replace('dist.init_process_group("gloo")', "pass"))
    assert found and all(not f.fix.safe for f in found)


def test_two_sentinels_in_one_test_become_one_condition():
    code = """
import os
import torch.distributed as dist
import torch_xla


def main():
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        dist.init_process_group("xla", init_method="xla://")


def _mp_fn(index):
    main()


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
"""
    (f,) = [f for f in findings(code, "XLA202") if "asks whether torchrun" in f.message]
    out = fixed(code, "XLA202")
    assert "    if xr.world_size() > 1:\n" in out
    # Mixed questions ("distributed?" and "not?") are left as two findings.
    mixed = code.replace('"WORLD_SIZE" in os.environ', '"WORLD_SIZE" not in os.environ')
    assert len([f for f in findings(mixed, "XLA202") if "asks whether" in f.message]) == 2


HELPER_MODULE = """
import os
import torch.distributed as dist


def init_distributed():
    if "RANK" not in os.environ:
        return False
    dist.init_process_group("nccl", init_method="env://")
    return True
"""

TORCHRUN_MAIN = """
import torch
from dist_utils import init_distributed


def main():
    init_distributed()
    print(torch.ones(1))


if __name__ == "__main__":
    main()
"""

XLA_MAIN = """
import torch
import torch_xla
from dist_utils import init_distributed


def _mp_fn(index):
    init_distributed()
    print(torch.ones(1))


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
"""


def _helper_fix(tmp_path: Path, main: str | None):
    helper = tmp_path / "dist_utils.py"
    helper.write_text(HELPER_MODULE, encoding="utf-8")
    if main is not None:
        (tmp_path / "train.py").write_text(main, encoding="utf-8")
    result = analyze(helper.read_text(), str(helper))
    (f,) = [f for f in result.findings if f.code == "XLA205" and f.fix is not None]
    return f.fix


def test_a_helper_module_called_by_a_torchrun_script_gets_the_backend_for_review(tmp_path):
    # The importer starts the processes: with torchrun the "xla" backend silently does not
    # reduce, so the rewrite in the module of helpers must not be applied unseen.
    fix = _helper_fix(tmp_path, TORCHRUN_MAIN)
    assert not fix.safe and "train.py" in fix.review_reason


def test_a_helper_module_with_no_caller_in_reach_gets_the_backend_for_review(tmp_path):
    fix = _helper_fix(tmp_path, None)
    assert not fix.safe and "no caller" in fix.review_reason


def test_a_helper_module_called_under_torch_xla_launch_is_fixed_safely(tmp_path):
    fix = _helper_fix(tmp_path, XLA_MAIN)
    assert fix.safe, fix.review_reason
